package benchwork

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The floor of the benchmarks: the workload of [Mock] as a
// hand-written loop of net/http and encoding/json would run it, with no
// library in between. A provider's cost is measured against it.

type floorCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type floorMsg struct {
	Role       string      `json:"role"`
	Content    *string     `json:"content,omitempty"`
	ToolCalls  []floorCall `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
}

type floorReq struct {
	Model    string            `json:"model"`
	Messages []floorMsg        `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream,omitempty"`
}

type floorResp struct {
	Choices []struct {
		Message      floorMsg `json:"message"`
		Delta        floorMsg `json:"delta"`
		FinishReason string   `json:"finish_reason"`
	} `json:"choices"`
}

// floorTool runs one call of the workload the way a hand-written loop would.
func floorTool(name string, args []byte) string {
	switch name {
	case "get_weather":
		var in struct {
			City string `json:"city"`
		}
		_ = json.Unmarshal(args, &in)
		return fmt.Sprintf("The weather in %s is Sunny, 22C.", in.City)
	case "add":
		var in struct{ A, B int }
		_ = json.Unmarshal(args, &in)
		return strconv.Itoa(in.A + in.B)
	}
	return "unknown tool " + name
}

func post(ctx context.Context, url string, body any, header http.Header) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header = header
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	return resp, nil
}

// FloorOpenAI runs the workload against the Chat Completions API at base
// (the server's root) with net/http and encoding/json alone, streaming or
// not, and returns the final text.
func FloorOpenAI(ctx context.Context, base string, stream bool) (string, error) {
	q := Question
	req := &floorReq{Model: "bench-model", Messages: []floorMsg{{Role: "user", Content: &q}}, Tools: OpenAITools, Stream: stream}
	h := http.Header{"Content-Type": {"application/json"}}
	for range 4 {
		resp, err := post(ctx, base+"/v1/chat/completions", req, h)
		if err != nil {
			return "", err
		}
		var msg floorMsg
		if stream {
			msg, err = floorOpenAISSE(resp.Body)
		} else {
			var r floorResp
			err = json.NewDecoder(resp.Body).Decode(&r)
			if err == nil && len(r.Choices) > 0 {
				msg = r.Choices[0].Message
			}
		}
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		if len(msg.ToolCalls) == 0 {
			if msg.Content == nil {
				return "", nil
			}
			return *msg.Content, nil
		}
		req.Messages = append(req.Messages, floorMsg{Role: "assistant", ToolCalls: msg.ToolCalls})
		for _, c := range msg.ToolCalls {
			out := floorTool(c.Function.Name, []byte(c.Function.Arguments))
			req.Messages = append(req.Messages, floorMsg{Role: "tool", Content: &out, ToolCallID: c.ID})
		}
	}
	return "", fmt.Errorf("no final answer")
}

func floorOpenAISSE(body io.Reader) (floorMsg, error) {
	msg := floorMsg{Role: "assistant"}
	var text strings.Builder
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			break
		}
		var c floorResp
		if err := json.Unmarshal(data, &c); err != nil {
			return msg, err
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(msg.ToolCalls) <= tc.Index {
					msg.ToolCalls = append(msg.ToolCalls, floorCall{})
				}
				cur := &msg.ToolCalls[tc.Index]
				cur.Index = tc.Index
				if tc.ID != "" {
					cur.ID, cur.Type = tc.ID, "function"
				}
				if tc.Function.Name != "" {
					cur.Function.Name = tc.Function.Name
				}
				cur.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	if s := text.String(); s != "" {
		msg.Content = &s
	}
	return msg, sc.Err()
}

type floorBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type floorTurn struct {
	Role    string       `json:"role"`
	Content []floorBlock `json:"content"`
}

type floorMessagesReq struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	Messages  []floorTurn       `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	Stream    bool              `json:"stream,omitempty"`
}

// FloorAnthropic runs the workload against the Messages API at base with
// net/http and encoding/json alone, streaming or not, and returns the final
// text.
func FloorAnthropic(ctx context.Context, base string, stream bool) (string, error) {
	req := &floorMessagesReq{Model: "bench-model", MaxTokens: 1024, Tools: AnthropicTools, Stream: stream,
		Messages: []floorTurn{{Role: "user", Content: []floorBlock{{Type: "text", Text: Question}}}}}
	h := http.Header{"Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"}}
	for range 4 {
		resp, err := post(ctx, base+"/v1/messages", req, h)
		if err != nil {
			return "", err
		}
		var content []floorBlock
		if stream {
			content, err = floorAnthropicSSE(resp.Body)
		} else {
			var r struct {
				Content []floorBlock `json:"content"`
			}
			err = json.NewDecoder(resp.Body).Decode(&r)
			content = r.Content
		}
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		var results []floorBlock
		var text strings.Builder
		for _, b := range content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "tool_use":
				results = append(results, floorBlock{Type: "tool_result", ToolUseID: b.ID, Content: floorTool(b.Name, b.Input)})
			}
		}
		if len(results) == 0 {
			return text.String(), nil
		}
		req.Messages = append(req.Messages, floorTurn{Role: "assistant", Content: content}, floorTurn{Role: "user", Content: results})
	}
	return "", fmt.Errorf("no final answer")
}

func floorAnthropicSSE(body io.Reader) ([]floorBlock, error) {
	var content []floorBlock
	var inputs []strings.Builder
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type         string     `json:"type"`
			Index        int        `json:"index"`
			ContentBlock floorBlock `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "content_block_start":
			for len(content) <= ev.Index {
				content = append(content, floorBlock{})
				inputs = append(inputs, strings.Builder{})
			}
			content[ev.Index] = ev.ContentBlock
		case "content_block_delta":
			if ev.Index < len(content) {
				content[ev.Index].Text += ev.Delta.Text
				inputs[ev.Index].WriteString(ev.Delta.PartialJSON)
			}
		}
	}
	for i := range content {
		if inputs[i].Len() > 0 {
			content[i].Input = json.RawMessage(inputs[i].String())
		}
	}
	return content, sc.Err()
}
