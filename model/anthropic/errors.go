package anthropic

import (
	"cmp"
	"context"
	"errors"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// eventError is the ProviderError of an error event inside a 200 stream:
// no status, retryable for the kinds of error that are transient.
func (m *Model) eventError(e *wireError, data []byte) *model.ProviderError {
	var typ, msg string
	if e != nil {
		typ, msg = strings.Clone(e.Type), strings.Clone(e.Message) // borrowed from data
	}
	if msg == "" {
		msg = cmp.Or(provider.BodyText(data), "the server sent an error event without a message")
	}
	pe := retry.HTTPError(providerName, 0, nil, typ, msg, m.key)
	pe.Retryable = typ == "overloaded_error" || typ == "api_error" || typ == "rate_limit_error"
	return pe
}

// Failures of a stream's transport, made *model.ProviderError by wrap.
var (
	errEmptyStream = errors.New("stream ended before its first event")
	errTruncated   = errors.New("stream ended before message_stop")
)

// wrap turns a transport failure into a *model.ProviderError, or the
// context's error when ctx has ended.
func (m *Model) wrap(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	e := retry.NetworkError(providerName, err, m.key)
	if errors.Is(err, provider.ErrTooLarge) {
		// Not a transient failure: the same request would be as large.
		e.Message = "the answer is larger than its limit (Options.MaxResponseBytes)"
		e.Retryable = false
	}
	return e
}
