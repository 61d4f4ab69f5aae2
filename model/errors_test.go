package model_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
)

func ExampleProviderError() {
	// A provider's failure, wrapped by the agent on its way to the caller.
	var err error = &model.ProviderError{Provider: "openai", StatusCode: http.StatusUnauthorized, Type: "invalid_api_key", Message: "Incorrect API key provided: [redacted]"}
	err = fmt.Errorf("agent: model turn 1: %w", err)

	var pe *model.ProviderError
	if errors.As(err, &pe) && pe.StatusCode == http.StatusUnauthorized {
		fmt.Println("check the key:", pe)
	}
	// Output:
	// check the key: openai: 401 Unauthorized: invalid_api_key: Incorrect API key provided: [redacted]
}

func TestProviderErrorPrintsDetailNotErr(t *testing.T) {
	const key = "sk-secret-0123"
	pe := &model.ProviderError{
		Provider: "anthropic",
		Err:      fmt.Errorf("post https://gw/%s/v1/messages: %w", key, io.ErrUnexpectedEOF),
		Detail:   "post https://gw/[redacted]/v1/messages: unexpected EOF",
		Attempts: 3,
	}
	got := pe.Error()
	want := "anthropic: post https://gw/[redacted]/v1/messages: unexpected EOF (after 3 attempts)"
	if got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	for _, s := range []string{got, fmt.Sprint(pe), fmt.Sprintf("%v", error(pe))} {
		if strings.Contains(s, key) {
			t.Errorf("the key appears in %q", s)
		}
	}
	if !errors.Is(pe, io.ErrUnexpectedEOF) {
		t.Error("Unwrap does not reach the network error")
	}
}
