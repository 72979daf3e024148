package fetchpage

import "github.com/toolhost/toolhost/catalog"

// The Chinese of the descriptions inside fetch_page's input and output
// schemas (Spec), by the JSON Pointer of the schema each describes.

// inputZH is the input schema's (a fresh map per spec: nobody shares it).
func inputZH() catalog.SchemaZH {
	return catalog.SchemaZH{
		"/properties/url":             "要抓取的 http 或 https URL",
		"/properties/max_length":      "本次调用最多返回的内容字符数",
		"/properties/start_index":     "从第几个字符开始；使用上一次结果的 next_start_index",
		"/properties/format":          "markdown：正文转为 Markdown；text：同样的正文，不带 Markdown 语法；html：原始页面",
		"/properties/pages":           "仅用于 PDF：要读取的页，如 \"5\"、\"301-600\" 或 \"1-3,10\"（默认从第一页开始）；一次调用最多返回服务端的页数预算（默认 300 页），并在 next_pages 中说明下一次该请求哪些页",
		"/properties/allowed_domains": "只允许抓取这些域名（及其子域名），重定向也一样",
		"/properties/blocked_domains": "从不抓取这些域名（及其子域名）",
	}
}

// outputZH is the output schema's.
func outputZH() catalog.SchemaZH {
	return catalog.SchemaZH{
		"/properties/url":                     "请求的 URL",
		"/properties/final_url":               "重定向之后的 URL",
		"/properties/status":                  "最终响应的 HTTP 状态码",
		"/properties/content":                 "这一部分内容",
		"/properties/returned_length":         "content 中的字符数",
		"/properties/total_length":            "全部内容的字符数",
		"/properties/truncated":               "后面还有内容时为 true",
		"/properties/next_start_index":        "截断时，下一部分的 start_index",
		"/properties/pages":                   "PDF 的页数",
		"/properties/pages_extracted":         "本次调用提取了文字的 PDF 页数（计费单位；之前读过的页不会再提取）",
		"/properties/page_range":              "文字在 content 中的 PDF 页，如 1-300",
		"/properties/next_pages":              "下一次调用作为 pages 传入的 PDF 页：页数预算截断时是所选范围的其余部分，否则是后面的页",
		"/properties/page_cut":                "HTML 页面的文字多于服务端提取的上限（fetch.max_extract_text_bytes）时为 true：content 只包含开头部分；format 为 html 时返回整个页面",
		"/properties/cached":                  "来自短期缓存",
		"/properties/error":                   "调用失败（isError）时代替其他字段出现：失败原因，用稳定的代码表示",
		"/properties/error/properties/code":   "invalid_url、url_too_long、address_not_allowed、domain_not_allowed、too_many_redirects、timeout、too_large、http_error、unsupported_content_type、robots_disallowed、extraction_failed、fetch_failed、invalid_input，或流水线的代码（invalid_arguments、denied、cancelled、internal_error 等）",
		"/properties/error/properties/status": "http_error：网站回答的 HTTP 状态码",
	}
}
