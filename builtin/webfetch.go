package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/tool"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// Defaults of [WebFetchOptions].
const (
	defaultWebFetchTimeout    = 30 * time.Second  // a call's timeout when it gives none
	defaultMaxWebFetchTimeout = 120 * time.Second // the longest timeout a call may ask for
	defaultMaxWebFetchBytes   = 5 << 20           // bytes of a response body read (5 MiB)
	defaultMaxWebFetchOutput  = 100 << 10         // bytes of converted text returned (100 KiB)
	defaultMaxRedirects       = 5                 // redirects followed
)

// Resolver looks up the addresses of a host name; *net.Resolver implements
// it. network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// WebFetchOptions configures the webfetch tool ([Options].WebFetch). The zero
// value is the guarded default: any public host, no private address.
type WebFetchOptions struct {
	// AllowHosts, when not empty, is the only hosts webfetch fetches from
	// (also on a redirect): "example.com" is that host, "*.example.com" its
	// subdomains (not itself). Case is ignored; ports do not matter.
	AllowHosts []string
	// DenyHosts are hosts never fetched from, in the same forms; a deny wins
	// over an allow.
	DenyHosts []string
	// AllowPrefixes are address ranges let through the private-address guard
	// (see the package documentation), e.g. 10.20.0.0/16 for an intranet
	// service, or 127.0.0.0/8 for a test server. Everything else that is
	// loopback, private, link-local, multicast, unspecified, shared (CGNAT),
	// reserved or a cloud metadata address is refused.
	AllowPrefixes []netip.Prefix
	// Resolver resolves host names (default net.DefaultResolver).
	Resolver Resolver
	// Timeout is a call's timeout when it gives none (default 30 s);
	// MaxTimeout the longest it may ask for (default 120 s).
	Timeout, MaxTimeout time.Duration
	// MaxBytes caps the response body read (default 5 MiB); the rest is
	// dropped and the output says so.
	MaxBytes int64
	// MaxOutputBytes caps the text returned after conversion (default 100 KiB),
	// with a marker.
	MaxOutputBytes int
	// MaxRedirects bounds the redirects followed (default 5); more is an error.
	MaxRedirects int
	// UserAgent is sent with every request (default "tollgate-webfetch/1").
	UserAgent string
}

func (o *WebFetchOptions) withDefaults() (WebFetchOptions, error) {
	var c WebFetchOptions
	if o != nil {
		c = *o
		c.AllowHosts, c.DenyHosts, c.AllowPrefixes = slices.Clone(o.AllowHosts), slices.Clone(o.DenyHosts), slices.Clone(o.AllowPrefixes)
	}
	if c.Timeout < 0 || c.MaxTimeout < 0 || c.MaxBytes < 0 || c.MaxOutputBytes < 0 || c.MaxRedirects < 0 {
		return c, errors.New("builtin: a WebFetchOptions limit is negative; use 0 for the default")
	}
	for _, list := range [][]string{c.AllowHosts, c.DenyHosts} {
		for i, h := range list {
			if _, err := hostPattern(h); err != nil {
				return c, fmt.Errorf("builtin: WebFetchOptions host pattern [%d] %q: %w", i, h, err)
			}
		}
	}
	for i, p := range c.AllowPrefixes {
		if !p.IsValid() {
			return c, fmt.Errorf("builtin: WebFetchOptions.AllowPrefixes[%d] is not a valid prefix", i)
		}
		c.AllowPrefixes[i] = p.Masked()
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Timeout == 0 {
		c.Timeout = defaultWebFetchTimeout
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = defaultMaxWebFetchTimeout
	}
	if c.Timeout > c.MaxTimeout || c.MaxTimeout < time.Second {
		return c, fmt.Errorf("builtin: WebFetchOptions: Timeout %v must not exceed MaxTimeout %v, which must be at least 1s", c.Timeout, c.MaxTimeout)
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = defaultMaxWebFetchBytes
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = defaultMaxWebFetchOutput
	}
	if c.MaxRedirects == 0 {
		c.MaxRedirects = defaultMaxRedirects
	}
	if c.UserAgent == "" {
		c.UserAgent = "tollgate-webfetch/1"
	}
	return c, nil
}

// hostPattern checks and lower-cases an allow or deny entry.
func hostPattern(h string) (string, error) {
	p := strings.ToLower(strings.TrimSuffix(h, "."))
	rest := strings.TrimPrefix(p, "*.")
	if rest == "" || strings.ContainsAny(rest, "*/:@ ") {
		return "", errors.New(`want a host name such as "example.com" or "*.example.com"`)
	}
	return p, nil
}

// hostMatches reports whether host (lower case, no port) matches a pattern of
// the list.
func hostMatches(host string, list []string) bool {
	for _, h := range list {
		p, _ := hostPattern(h)
		if sub, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(host, "."+sub) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}

// webFetchInput is the input of the webfetch tool.
type webFetchInput struct {
	URL     string `json:"url" jsonschema:"the http or https URL to fetch"`
	Format  string `json:"format,omitempty" jsonschema:"markdown (default), text or html"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"timeout in seconds"`
}

// refusedAddr is the guard's refusal of an address; its text is what the model sees.
type refusedAddr struct {
	host string
	addr netip.Addr
	why  string
}

func (e *refusedAddr) Error() string {
	if _, err := netip.ParseAddr(e.host); err != nil && e.host != "" {
		return fmt.Sprintf("refused: %s resolves to %s, a %s address", e.host, e.addr, e.why)
	}
	return fmt.Sprintf("refused: %s is a %s address", e.addr, e.why)
}

// blockedPrefixes are ranges refused besides those netip classifies
// (loopback, private, link-local, multicast, unspecified).
var blockedPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved (this network)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
}

// addrClass returns why a is refused by default, or "" when it is a public
// address. IPv4-mapped IPv6 addresses are judged as IPv4.
func addrClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		if a == netip.MustParseAddr("169.254.169.254") {
			return "cloud metadata"
		}
		return "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsUnspecified():
		return "unspecified"
	case a == netip.MustParseAddr("255.255.255.255"):
		return "broadcast"
	}
	for _, b := range blockedPrefixes {
		if b.p.Contains(a) {
			return b.why
		}
	}
	return ""
}

// webFetcher holds webfetch's options and its HTTP transport.
type webFetcher struct {
	o         WebFetchOptions
	transport *http.Transport
}

// check returns the guard's refusal of addr (reached through host), or nil.
func (w *webFetcher) check(host string, addr netip.Addr) error {
	why := addrClass(addr)
	if why == "" {
		return nil
	}
	for _, p := range w.o.AllowPrefixes {
		if p.Contains(addr.Unmap()) || p.Contains(addr) {
			return nil
		}
	}
	return &refusedAddr{host: host, addr: addr.Unmap(), why: why}
}

// dial resolves the host of addr itself and dials only addresses the guard
// lets through; the dialer's Control checks again the address actually
// connected to, so nothing between resolution and connection can swap it.
func (w *webFetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = w.o.Resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	d := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("refused: cannot check the address %q", address)
		}
		return w.check(host, ap.Addr())
	}}
	var firstErr error
	for _, a := range addrs {
		if err := w.check(host, a); err != nil {
			firstErr = cmpOr(firstErr, err)
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		firstErr = cmpOr(firstErr, err)
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("no address found for %s", host)
	}
	return nil, firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// checkURL refuses a URL that is not http(s), has no host or a host the
// allow and deny lists keep out.
func (w *webFetcher) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("refused: scheme %q; webfetch fetches http and https URLs only", u.Scheme)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return errors.New("the URL has no host")
	}
	if hostMatches(host, w.o.DenyHosts) {
		return fmt.Errorf("refused: host %s is on the deny list", host)
	}
	if len(w.o.AllowHosts) > 0 && !hostMatches(host, w.o.AllowHosts) {
		return fmt.Errorf("refused: host %s is not on the allow list", host)
	}
	return nil
}

func (b *builtins) webFetchTool() (tool.Tool, error) {
	o, err := b.opts.WebFetch.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &webFetcher{o: o}
	w.transport = &http.Transport{
		Proxy:                  nil, // a proxy would connect on our behalf, past the guard
		DialContext:            w.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		IdleConnTimeout:        30 * time.Second,
		MaxIdleConns:           8,
	}
	b.web = w
	s, err := jsonschema.For[webFetchInput](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["format"].Enum = []any{"markdown", "text", "html"}
	one, maxS := 1.0, o.MaxTimeout.Seconds()
	s.Properties["timeout"].Minimum, s.Properties["timeout"].Maximum = &one, &maxS
	s.Properties["timeout"].Description = fmt.Sprintf("timeout in seconds (default %d, at most %d)", int(o.Timeout.Seconds()), int(maxS))
	desc := fmt.Sprintf("Fetch a web page or text document by http(s) URL and return its content: HTML as Markdown "+
		"(format markdown, the default), as plain text (text) or as it is (html). Only text content types are "+
		"returned; at most %d bytes of the body are read and %d bytes returned. Private, loopback and link-local "+
		"addresses are refused.", o.MaxBytes, o.MaxOutputBytes)
	return tool.New(toolWebFetch, desc, b.webFetch, &tool.FuncOptions{
		Hints:       &tool.Hints{ReadOnly: true, OpenWorld: true},
		InputSchema: s,
		Source:      source,
	})
}

// textTypes are the non-text/* media types webfetch returns.
var textTypes = []string{"application/json", "application/xml", "application/xhtml+xml", "application/javascript",
	"application/ecmascript", "application/x-yaml", "application/yaml", "application/toml", "application/x-sh"}

func isTextType(mt string) bool {
	return strings.HasPrefix(mt, "text/") || slices.Contains(textTypes, mt) ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

func (b *builtins) webFetch(ctx context.Context, in webFetchInput) (tool.Result, error) {
	w := b.web
	format := in.Format
	if format == "" {
		format = "markdown"
	}
	timeout := w.o.Timeout
	if in.Timeout > 0 {
		timeout = time.Duration(in.Timeout) * time.Second
	}
	if timeout > w.o.MaxTimeout {
		return tool.Errorf("timeout %d s exceeds the maximum of %d s", in.Timeout, int(w.o.MaxTimeout.Seconds())), nil
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return tool.Errorf("invalid URL: %v", err), nil
	}
	if err := w.checkURL(u); err != nil {
		return tool.Error(err.Error()), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{
		Transport: w.transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > w.o.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", w.o.MaxRedirects)
			}
			if err := w.checkURL(req.URL); err != nil {
				return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Errorf("invalid URL: %v", err), nil
	}
	req.Header.Set("User-Agent", w.o.UserAgent)
	accept := "text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1"
	if format == "html" {
		accept = "text/html;q=1.0, application/xhtml+xml;q=0.9, */*;q=0.1"
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return tool.Error(fetchError(in.URL, err)), nil
	}
	defer resp.Body.Close()
	final := resp.Request.URL.Redacted()
	body, err := io.ReadAll(io.LimitReader(resp.Body, w.o.MaxBytes+1))
	if err != nil {
		return tool.Error(fetchError(final, err)), nil
	}
	cut := int64(len(body)) > w.o.MaxBytes
	if cut {
		body = body[:w.o.MaxBytes]
	}
	if resp.StatusCode >= 400 {
		return tool.Errorf("%s: HTTP %s", final, resp.Status), nil
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return tool.Errorf("%s: unreadable content type %q", final, ct), nil
	}
	if !isTextType(mt) {
		return tool.Errorf("%s: content type %s is not text; webfetch returns text only", final, mt), nil
	}
	if e, name, _ := charset.DetermineEncoding(body, ct); name != "utf-8" {
		if dec, err := e.NewDecoder().Bytes(body); err == nil {
			body = dec
		}
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	switch {
	case isHTML && format == "markdown":
		md, err := htmltomarkdown.ConvertString(text, converter.WithDomain(final), converter.WithContext(ctx))
		if err != nil {
			return tool.Errorf("%s: converting HTML to Markdown: %v", final, err), nil
		}
		text = md
	case isHTML && format == "text":
		text = htmlText(text)
	}
	var out strings.Builder
	out.WriteString(clipString(text, w.o.MaxOutputBytes))
	if len(text) > w.o.MaxOutputBytes {
		fmt.Fprintf(&out, "\n[output truncated: %d bytes dropped]", len(text)-len(clipString(text, w.o.MaxOutputBytes)))
	}
	if cut {
		fmt.Fprintf(&out, "\n[response truncated: only the first %d bytes were read]", w.o.MaxBytes)
	}
	return tool.Result{Output: out.String(), Metadata: map[string]any{
		"url": final, "status": resp.StatusCode, "contentType": mt, "bytes": len(body), "truncated": cut || len(text) > w.o.MaxOutputBytes,
	}}, nil
}

// fetchError is the text the model sees for a failed request: the guard's
// refusal as it is, other errors with the URL.
func fetchError(u string, err error) string {
	var ref *refusedAddr
	if errors.As(err, &ref) {
		return fmt.Sprintf("%s: %v", u, ref)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Sprintf("fetching %s: %v", u, err)
}

// clipString cuts s to at most n bytes without splitting a rune.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// htmlText returns the text of an HTML document: no script, style or
// template content, a line break after each block element, runs of blank
// lines and spaces collapsed.
func htmlText(src string) string {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return src
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			for _, r := range n.Data {
				if r == '\n' || r == '\r' || r == '\t' {
					r = ' '
				}
				b.WriteRune(r)
			}
			return
		case html.ElementNode:
			switch n.Data {
			case "script", "style", "noscript", "template", "head", "svg":
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && isBlock(n.Data) {
			b.WriteByte('\n')
		}
	}
	walk(doc)
	var out []string
	blank := false
	for line := range strings.SplitSeq(b.String(), "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, line)
	}
	return strings.TrimSpace(strings.Join(out, "\n")) + "\n"
}

func isBlock(tag string) bool {
	switch tag {
	case "p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table",
		"section", "article", "header", "footer", "nav", "pre", "blockquote", "hr", "dt", "dd", "title", "main", "aside", "form":
		return true
	}
	return false
}
