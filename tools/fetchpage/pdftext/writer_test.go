package pdftext

// A tiny PDF writer for the tests: enough to build pages with text in a few
// font kinds, form XObjects and standard (RC4, 128-bit) encryption.

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"crypto/rc4"
	"fmt"
	"maps"
	"slices"
	"strings"
)

type testPDF struct {
	pages    []string          // content streams, one per page
	fonts    map[string]string // resource name -> font dictionary ("" for the defaults)
	xobjects map[string]string // resource name -> form content stream
	rotate   int               // /Rotate of every page
	userPW   *string           // encrypt with this user password
	compress bool              // Flate-compress content streams
	version  string            // header version, default 1.4
}

// courier is a simple font with WinAnsi encoding and 600-unit widths.
func courier(extra string) string {
	w := strings.TrimSpace(strings.Repeat("600 ", 224))
	return fmt.Sprintf("<< /Type /Font /Subtype /Type1 /BaseFont /Courier /FirstChar 32 /LastChar 255 /Widths [%s] %s >>", w, extra)
}

var padding = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

func (p testPDF) bytes() []byte {
	type obj struct {
		dict   string
		stream []byte
		raw    bool // dict is the whole body
	}
	var objs []obj
	add := func(o obj) int { objs = append(objs, o); return len(objs) }
	ref := func(n int) string { return fmt.Sprintf("%d 0 R", n) }

	fonts := p.fonts
	if fonts == nil {
		fonts = map[string]string{"F1": courier("/Encoding /WinAnsiEncoding")}
	}
	var fontRes strings.Builder
	for _, name := range slices.Sorted(maps.Keys(fonts)) {
		fmt.Fprintf(&fontRes, "/%s %s ", name, ref(add(obj{dict: fonts[name], raw: true})))
	}
	var xoRes strings.Builder
	for _, name := range slices.Sorted(maps.Keys(p.xobjects)) {
		content := p.xobjects[name]
		n := add(obj{dict: fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << %s>> >>", fontRes.String()), stream: []byte(content)})
		fmt.Fprintf(&xoRes, "/%s %s ", name, ref(n))
	}
	res := add(obj{dict: fmt.Sprintf("<< /Font << %s>> /XObject << %s>> >>", fontRes.String(), xoRes.String()), raw: true})
	pagesN := len(objs) + 1
	add(obj{}) // placeholder for the page tree
	var kids []string
	for _, c := range p.pages {
		cn := add(obj{stream: []byte(c)})
		pn := add(obj{dict: fmt.Sprintf("<< /Type /Page /Parent %s /MediaBox [0 0 612 792] /Rotate %d /Contents %s >>", ref(pagesN), p.rotate, ref(cn)), raw: true})
		kids = append(kids, ref(pn))
	}
	objs[pagesN-1] = obj{dict: fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources %s >>", strings.Join(kids, " "), len(kids), ref(res)), raw: true}
	catalog := add(obj{dict: fmt.Sprintf("<< /Type /Catalog /Pages %s >>", ref(pagesN)), raw: true})

	id := []byte("0123456789abcdef")
	var key []byte
	encryptN := 0
	if p.userPW != nil {
		o := bytes.Repeat([]byte{0x42}, 32) // the owner entry only feeds the key
		perm := int32(-4)
		h := md5.New()
		h.Write(append([]byte(*p.userPW), padding...)[:32])
		h.Write(o)
		h.Write([]byte{byte(perm), byte(perm >> 8), byte(perm >> 16), byte(perm >> 24)})
		h.Write(id)
		key = h.Sum(nil)
		for i := 0; i < 50; i++ {
			s := md5.Sum(key[:16])
			key = s[:]
		}
		h = md5.New()
		h.Write(padding)
		h.Write(id)
		u := h.Sum(nil)
		for i := 0; i <= 19; i++ {
			k := make([]byte, 16)
			for j := range k {
				k[j] = key[j] ^ byte(i)
			}
			c, _ := rc4.NewCipher(k)
			c.XORKeyStream(u, u)
		}
		u = append(u, make([]byte, 16)...)
		encryptN = add(obj{dict: fmt.Sprintf("<< /Filter /Standard /V 2 /R 3 /Length 128 /P %d /O <%x> /U <%x> >>", perm, o, u), raw: true})
	}

	var b bytes.Buffer
	version := p.version
	if version == "" {
		version = "1.4"
	}
	fmt.Fprintf(&b, "%%PDF-%s\n%%\xe2\xe3\xcf\xd3\n", version)
	offsets := make([]int, len(objs)+1)
	for i, o := range objs {
		n := i + 1
		offsets[n] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", n)
		if o.raw {
			b.WriteString(o.dict)
		} else {
			data := o.stream
			filter := ""
			if p.compress {
				var z bytes.Buffer
				zw := zlib.NewWriter(&z)
				zw.Write(data)
				zw.Close()
				data, filter = z.Bytes(), " /Filter /FlateDecode"
			}
			if key != nil && n != encryptN {
				h := md5.New()
				h.Write(key[:16])
				h.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0, 0})
				c, _ := rc4.NewCipher(h.Sum(nil)[:16])
				enc := make([]byte, len(data))
				c.XORKeyStream(enc, data)
				data = enc
			}
			fmt.Fprintf(&b, "<< %s /Length %d%s >>\nstream\n", o.dict, len(data), filter)
			b.Write(data)
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets[1:] {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	trailer := fmt.Sprintf("/Size %d /Root %s /ID [<%x> <%x>]", len(objs)+1, ref(catalog), id, id)
	if encryptN != 0 {
		trailer += " /Encrypt " + ref(encryptN)
	}
	fmt.Fprintf(&b, "trailer\n<< %s >>\nstartxref\n%d\n%%%%EOF\n", trailer, xref)
	return b.Bytes()
}

// textAt is a content fragment that shows s with font F1 at (x, y).
func textAt(font string, size, x, y float64, s string) string {
	return fmt.Sprintf("BT /%s %g Tf %g %g Td (%s) Tj ET\n", font, size, x, y, s)
}
