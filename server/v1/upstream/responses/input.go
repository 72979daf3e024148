package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// Input items the client writes.
type (
	inputMessage struct {
		Content any    `json:"content"`
		Role    string `json:"role"`
		Type    string `json:"type"`
	}
	inputText struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	inputImage struct {
		Detail   json.RawMessage `json:"detail,omitempty"`
		ImageURL string          `json:"image_url"`
		Type     string          `json:"type"`
	}
	inputFile struct {
		FileData json.RawMessage `json:"file_data,omitempty"`
		FileID   json.RawMessage `json:"file_id,omitempty"`
		Filename json.RawMessage `json:"filename,omitempty"`
		Type     string          `json:"type"`
	}
	outputTextPart struct {
		Annotations []json.RawMessage `json:"annotations"`
		Text        string            `json:"text"`
		Type        string            `json:"type"`
	}
	functionCallItem struct {
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Type      string `json:"type"`
	}
	functionCallOutputItem struct {
		CallID string `json:"call_id"`
		Output string `json:"output"`
		Type   string `json:"type"`
	}
)

// EncodeMessage renders a canonical message as Responses input items: its
// native items first, then an assistant's text and function calls, a tool
// result's function_call_output, or a message of the other roles (text,
// images and files as input parts; parts with no Responses form are left
// out, as the other clients do).
func EncodeMessage(m loop.Message) ([]json.RawMessage, error) {
	out := append([]json.RawMessage(nil), m.NativeItems...)
	add := func(v any) error {
		b, err := upstream.Marshal(v)
		if err != nil {
			return err
		}
		out = append(out, b)
		return nil
	}
	switch m.Role {
	case loop.RoleTool:
		text := m.Text
		if m.IsError {
			text = "[tool error] " + text
		}
		return out, add(functionCallOutputItem{Type: "function_call_output", CallID: m.ToolCallID, Output: text})
	case loop.RoleAssistant:
		if m.Text != "" {
			part := outputTextPart{Type: "output_text", Text: m.Text, Annotations: []json.RawMessage{}}
			if err := add(inputMessage{Type: "message", Role: "assistant", Content: []outputTextPart{part}}); err != nil {
				return nil, err
			}
		}
		for _, tc := range m.ToolCalls {
			if err := add(functionCallItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: string(tc.Args)}); err != nil {
				return nil, err
			}
		}
		return out, nil
	case loop.RoleUser, loop.RoleSystem, loop.RoleDeveloper:
		if len(m.Parts) == 0 {
			return out, add(inputMessage{Type: "message", Role: string(m.Role), Content: m.Text})
		}
		parts := make([]any, 0, len(m.Parts))
		for _, p := range m.Parts {
			if part, ok := inputPart(p); ok {
				parts = append(parts, part)
			}
		}
		return out, add(inputMessage{Type: "message", Role: string(m.Role), Content: parts})
	}
	return nil, fmt.Errorf("message role %q has no Responses form", m.Role)
}

// inputPart is a content part (Chat Completions or Messages, by its type)
// as a Responses input part.
func inputPart(p loop.Part) (any, bool) {
	switch p.Type {
	case "text", "input_text":
		return inputText{Type: "input_text", Text: p.Text}, true
	case "image_url":
		var w struct {
			ImageURL struct {
				URL    string          `json:"url"`
				Detail json.RawMessage `json:"detail"`
			} `json:"image_url"`
		}
		if json.Unmarshal(p.Raw, &w) != nil || w.ImageURL.URL == "" {
			return nil, false
		}
		return inputImage{Type: "input_image", ImageURL: w.ImageURL.URL, Detail: w.ImageURL.Detail}, true
	case "image":
		var w struct {
			Source struct {
				Type      string `json:"type"`
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
				URL       string `json:"url"`
			} `json:"source"`
		}
		if json.Unmarshal(p.Raw, &w) != nil {
			return nil, false
		}
		switch s := w.Source; {
		case s.Type == "base64" && strings.HasPrefix(s.MediaType, "image/"):
			return inputImage{Type: "input_image", ImageURL: "data:" + s.MediaType + ";base64," + s.Data}, true
		case s.Type == "url" && s.URL != "":
			return inputImage{Type: "input_image", ImageURL: s.URL}, true
		}
	case "file":
		var w struct {
			File struct {
				FileData json.RawMessage `json:"file_data"`
				FileID   json.RawMessage `json:"file_id"`
				Filename json.RawMessage `json:"filename"`
			} `json:"file"`
		}
		if json.Unmarshal(p.Raw, &w) != nil {
			return nil, false
		}
		return inputFile{Type: "input_file", FileData: w.File.FileData, FileID: w.File.FileID, Filename: w.File.Filename}, true
	}
	return nil, false
}
