package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

type event struct{ Type, Data string }

func readEvents(r io.Reader) ([]event, error) {
	e := NewEvents(r)
	var out []event
	for e.Next() {
		out = append(out, event{string(e.Type()), string(e.Data())})
	}
	return out, e.Err()
}

func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []event
	}{
		{"data only", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []event{{"", `{"a":1}`}, {"", "[DONE]"}}},
		{"typed", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n", []event{{"message_start", "{}"}, {"ping", `{"type": "ping"}`}}},
		{"no space after the colon", "event:x\ndata:y\n\n", []event{{"x", "y"}}},
		{"several data lines", "data: a\ndata: b\n\n", []event{{"", "a\nb"}}},
		{"comments and other fields", ": keep-alive\nid: 7\nretry: 10\ndata: a\n\n", []event{{"", "a"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []event{{"", "a"}, {"", "b"}}},
		{"blank lines between", "\n\n\ndata: a\n\n\n\n", []event{{"", "a"}}},
		{"an event type without data is dropped", "event: x\n\ndata: a\n\n", []event{{"", "a"}}},
		{"empty data is an event", "data:\n\n", []event{{"", ""}}},
		{"an event cut off by the end is not dispatched", "data: a\n\ndata: {\"cut", []event{{"", "a"}}},
		{"no blank line before the end", "data: a\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readEvents(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// The same, one byte at a time.
			got, err = readEvents(iotest.OneByteReader(strings.NewReader(tc.in)))
			if err != nil || !cmp.Equal(tc.want, got) {
				t.Errorf("one byte at a time: %v, %v", got, err)
			}
		})
	}
}

func TestEventsLimits(t *testing.T) {
	// One line longer than the limit.
	long := "data: " + strings.Repeat("x", MaxEventBytes+1) + "\n\n"
	if _, err := readEvents(strings.NewReader(long)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a line over the limit: %v, want ErrTooLarge", err)
	}
	// Many lines of one event, together over the limit.
	var b strings.Builder
	line := "data: " + strings.Repeat("y", 1<<20) + "\n"
	for b.Len() <= MaxEventBytes+len(line) {
		b.WriteString(line)
	}
	if _, err := readEvents(strings.NewReader(b.String() + "\n")); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an event over the limit: %v, want ErrTooLarge", err)
	}
	// A read error ends the events with it.
	boom := errors.New("boom")
	if _, err := readEvents(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}

func TestReadBodySize(t *testing.T) {
	for _, tc := range []struct {
		body        string
		size, limit int64
		want        string
		err         error
	}{
		{"12345", 5, 10, "12345", nil},
		{"", 0, 10, "", nil},
		{"1234567", 5, 10, "1234567", nil}, // longer than announced
		{"123456", 5, 10, "123456", nil},   // by one byte
		{"123", 5, 10, "", io.ErrUnexpectedEOF},
		{"", 5, 10, "", io.ErrUnexpectedEOF},
		{"12345678901", 5, 10, "", ErrTooLarge},
		{"12345678901", 11, 10, "", ErrTooLarge}, // announced over the limit
		{"123", -1, 10, "123", nil},
	} {
		got, err := ReadBodySize(strings.NewReader(tc.body), tc.size, tc.limit)
		if !errors.Is(err, tc.err) || (err == nil && string(got) != tc.want) {
			t.Errorf("%q announced %d, limit %d: %q, %v; want %q, %v", tc.body, tc.size, tc.limit, got, err, tc.want, tc.err)
		}
	}
}

func TestReadBody(t *testing.T) {
	if b, err := ReadBody(strings.NewReader("12345"), 5); err != nil || string(b) != "12345" {
		t.Errorf("at the limit: %q, %v", b, err)
	}
	if _, err := ReadBody(strings.NewReader("123456"), 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
}

// FuzzEvents reads arbitrary streams: no panic, every event's data is made
// of the stream's data lines, and reading byte by byte gives the same events.
func FuzzEvents(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(": c\r\ndata:x\r\ndata: y\r\n\r\nevent:e\n\n"))
	f.Add([]byte("data: cut"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readEvents(bytes.NewReader(in))
		if err != nil {
			return
		}
		one, err := readEvents(iotest.OneByteReader(bytes.NewReader(in)))
		if err != nil || !cmp.Equal(got, one) {
			t.Errorf("byte by byte: %v, %v; whole: %v", one, err, got)
		}
		for _, ev := range got {
			for _, line := range strings.Split(ev.Data, "\n") {
				if !bytes.Contains(in, []byte(line)) {
					t.Errorf("data line %q is not in the stream", line)
				}
			}
		}
	})
}

func TestRequestHeader(t *testing.T) {
	extra := http.Header{"Authorization": {"Bearer k"}, "X-Tenant": {"a", "b"}, "Accept": {"application/x-ndjson"}}
	h := RequestHeader(extra, "text/event-stream")
	want := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/x-ndjson"}, "Authorization": {"Bearer k"}, "X-Tenant": {"a", "b"}}
	if d := cmp.Diff(want, h); d != "" {
		t.Errorf("RequestHeader (-want +got):\n%s", d)
	}
	extra["X-Tenant"][0] = "changed"
	if h.Get("X-Tenant") != "a" {
		t.Error("RequestHeader shares its values with extra")
	}
	if got := RequestHeader(nil, "application/json"); got.Get("Accept") != "application/json" || got.Get("Content-Type") != "application/json" {
		t.Errorf("RequestHeader(nil) = %v", got)
	}
}

// headerWriter is a RoundTripper that writes to each request's header in
// place, as some middleware does.
type headerWriter struct{ next http.RoundTripper }

func (w headerWriter) RoundTrip(r *http.Request) (*http.Response, error) {
	r.Header.Add("X-Seen", "1")
	return w.next.RoundTrip(r)
}

// Post hands the header it is given to every request; a client that may
// write to a request's header gets a copy each time, so the shared header
// never changes and concurrent calls never write one map.
func TestPostHeaderNotWritten(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, strings.Join(r.Header.Values("X-Seen"), ","))
	}))
	defer srv.Close()
	header := RequestHeader(http.Header{"X-Tenant": {"a"}}, "application/json")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "session", Value: "s"}})
	for _, c := range []*http.Client{
		{Transport: headerWriter{http.DefaultTransport}},
		{Jar: jar},
	} {
		for range 2 {
			resp, err := Post(context.Background(), c, srv.URL, header, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if d := cmp.Diff(http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "X-Tenant": {"a"}}, header); d != "" {
			t.Fatalf("the shared header was written to (-want +got):\n%s", d)
		}
	}
	if d := cmp.Diff([]string{"1", "1", "", ""}, seen); d != "" {
		t.Errorf("X-Seen per request (-want +got):\n%s", d)
	}
}

func TestReadOnlyHeader(t *testing.T) {
	for _, tc := range []struct {
		c    *http.Client
		want bool
	}{
		{http.DefaultClient, true},
		{&http.Client{Transport: &http.Transport{}}, true},
		{&http.Client{Transport: headerWriter{http.DefaultTransport}}, false},
		{&http.Client{Jar: new(cookiejar.Jar)}, false},
	} {
		if got := readOnlyHeader(tc.c); got != tc.want {
			t.Errorf("readOnlyHeader(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
	// A program that wraps http.DefaultTransport wraps the clients without
	// a transport of their own.
	def := http.DefaultTransport
	defer func() { http.DefaultTransport = def }()
	http.DefaultTransport = headerWriter{def}
	if readOnlyHeader(http.DefaultClient) {
		t.Error("readOnlyHeader(DefaultClient) with a wrapped DefaultTransport = true")
	}
}

// TestEventsLimit: a body of exactly the limit is read whole; one byte more
// ends the events with ErrTooLarge, after those that fit were dispatched.
func TestEventsLimit(t *testing.T) {
	body := "data: 1\n\ndata: 2\n\n" // 18 bytes
	e := NewEventsLimit(strings.NewReader(body), int64(len(body)))
	n := 0
	for e.Next() {
		n++
	}
	if n != 2 || e.Err() != nil {
		t.Errorf("at the limit: %d events, err %v; want 2, nil", n, e.Err())
	}
	e = NewEventsLimit(strings.NewReader(body+":"), int64(len(body)))
	n = 0
	for e.Next() {
		n++
	}
	if n != 2 || !errors.Is(e.Err(), ErrTooLarge) || !strings.Contains(e.Err().Error(), "18 bytes") {
		t.Errorf("one byte past the limit: %d events, err %v; want 2 and ErrTooLarge stating 18 bytes", n, e.Err())
	}
	e = NewEventsLimit(strings.NewReader(body), 12)
	n = 0
	for e.Next() {
		n++
	}
	if n != 1 || !errors.Is(e.Err(), ErrTooLarge) {
		t.Errorf("limit inside the second event: %d events, err %v; want 1 and ErrTooLarge", n, e.Err())
	}
}
