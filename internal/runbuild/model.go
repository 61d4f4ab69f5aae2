package runbuild

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/model/scripted"
	"github.com/tollgate-dev/tollgate/runs"
)

// ModelOptions configures [OpenModel]; nil means defaults.
type ModelOptions struct {
	// APIKey is used before any environment variable; never stored, logged
	// or put in an error.
	APIKey string
	// Logger receives the provider's retries, with how long each waits.
	Logger *slog.Logger
	// Getenv reads the variables that hold keys (nil: os.Getenv): a host
	// whose environment is not the process's gives its own.
	Getenv func(string) string
}

// OpenModel opens the model ref names and returns it with the model name to
// send. Provider "script" replays the YAML script at Name (package
// model/scripted); "openai" speaks OpenAI Chat Completions at BaseURL
// (default the vendor's; any compatible server); "anthropic" the Anthropic
// Messages API. The key is opts.APIKey, else the variable APIKeyEnv names
// (unset or empty is an error), else, for the hosted service it belongs to
// only, OPENAI_API_KEY (api.openai.com), OPENROUTER_API_KEY (openrouter.ai)
// or ANTHROPIC_API_KEY (api.anthropic.com): a vendor's key is never sent to
// another server. The hosted services require a key; other servers (a local
// Ollama) may need none. A run started with a key given directly
// (KeyGiven) needs opts.APIKey again. Errors are [*runs.FieldError]s naming
// "model", "model.baseUrl" or "model.apiKeyEnv"; none contains the key. A
// missing key is a [*KeyError] inside the FieldError, so that a host can
// say how its users give one (the command line's --api-key).
func OpenModel(ref runs.ModelRef, opts *ModelOptions) (model.Model, string, error) {
	var o ModelOptions
	if opts != nil {
		o = *opts
	}
	fieldErr := func(field, format string, args ...any) error {
		return &runs.FieldError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	if _, err := runcore.ParseModelRef(ref.String()); err != nil {
		return nil, "", &runs.FieldError{Field: "model", Err: err}
	}
	switch ref.Provider {
	case "script":
		if ref.BaseURL != "" || ref.APIKeyEnv != "" {
			return nil, "", fieldErr("model", "baseUrl and apiKeyEnv are for openai and anthropic models, not script")
		}
		m, err := scripted.Load(ref.Name)
		if err != nil {
			return nil, "", &runs.FieldError{Field: "model", Err: err}
		}
		return m, ref.Name, nil
	case "openai", "anthropic":
	default:
		return nil, "", fieldErr("model", "%q: unknown provider %q (known: script, openai, anthropic)", ref.String(), ref.Provider)
	}
	if ref.KeyGiven && o.APIKey == "" {
		return nil, "", fieldErr("model", "the run was started with a key given directly, which is never stored; give it again")
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var base, envVar string
	if ref.Provider == "openai" {
		base = cmp.Or(ref.BaseURL, provider.OpenAIBaseURL)
		_, envVar = openai.KeyFromEnv(base)
	} else {
		base = cmp.Or(ref.BaseURL, provider.AnthropicBaseURL)
		_, envVar = anthropic.KeyFromEnv()
	}
	envKey := getenv(envVar)
	key := o.APIKey
	switch {
	case key != "":
	case ref.APIKeyEnv != "":
		if key = getenv(ref.APIKeyEnv); key == "" {
			return nil, "", &runs.FieldError{Field: "model.apiKeyEnv", Err: &KeyError{Host: hostOf(base), Variable: ref.APIKeyEnv, Named: true}}
		}
	case HostedService(base):
		if key = envKey; key == "" {
			return nil, "", &runs.FieldError{Field: "model", Err: &KeyError{Host: hostOf(base), Variable: envVar}}
		}
	}
	var m model.Model
	var err error
	if ref.Provider == "openai" {
		m, err = openai.New(&openai.Options{BaseURL: base, APIKey: key, Model: ref.Name, Logger: o.Logger})
	} else {
		m, err = anthropic.New(&anthropic.Options{BaseURL: base, APIKey: key, Model: ref.Name, Logger: o.Logger})
	}
	if err != nil {
		return nil, "", &runs.FieldError{Field: "model.baseUrl", Err: redact(err, key)}
	}
	return m, ref.Name, nil
}

// KeyError is what [OpenModel] reports, as the Err of a [*runs.FieldError],
// when it has no API key for the model's server: either the variable the
// configuration's apiKeyEnv names is unset or empty (Named; the field is
// "model.apiKeyEnv"), or the server is a hosted service that requires a key
// and the vendor's own variable is unset or empty (the field is "model").
// It never holds a key.
type KeyError struct {
	// Host is the lower-case host name of the model's server
	// ("api.openai.com").
	Host string
	// Variable is the environment variable that was to hold the key
	// ("OPENAI_API_KEY", or the one apiKeyEnv names).
	Variable string
	// Named is true when Variable is the one the configuration's apiKeyEnv
	// names, false when it is the hosted service's own.
	Named bool
}

// Error returns "VARIABLE: the variable is unset or empty" when Named, else
// "no API key for HOST: set VARIABLE".
func (e *KeyError) Error() string {
	if e.Named {
		return e.Variable + ": the variable is unset or empty"
	}
	return "no API key for " + e.Host + ": set " + e.Variable
}

// HostedService reports whether base is one of the hosted APIs tollgate
// knows (OpenAI, OpenRouter, Anthropic), which always want a key and are
// the only servers a vendor's variable's key is sent to.
func HostedService(base string) bool {
	h := hostOf(base)
	for _, svc := range []string{provider.OpenAIBaseURL, provider.OpenRouterBaseURL, provider.AnthropicBaseURL} {
		if h == hostOf(svc) {
			return true
		}
	}
	return strings.HasSuffix(h, ".openrouter.ai")
}

// hostOf returns the lower-case host name of a URL, "" when it has none.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// redact returns err with every occurrence of key in its text replaced.
func redact(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
}
