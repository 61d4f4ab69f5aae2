package main

import (
	"cmp"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/model/scripted"
)

// modelKinds is the --model help: the kinds openModel knows.
const modelKinds = `Models (--model KIND:NAME):
  script:PATH       replays a YAML script of assistant turns (offline)
  openai:MODEL      OpenAI Chat Completions, or any server that speaks it
                    (OpenRouter, Ollama, vLLM, LM Studio) with --base-url
  anthropic:MODEL   Anthropic Messages API
The key comes from --api-key, else from the variable --api-key-env names,
else, for the hosted service it belongs to only, from OPENAI_API_KEY (api.openai.com),
OPENROUTER_API_KEY (openrouter.ai) or ANTHROPIC_API_KEY (api.anthropic.com):
a vendor's key is never sent to another --base-url. The hosted services
require a key; other servers may need none. The key is never printed, logged
or stored with a halted run: 'tollgate resume' reads it from the environment
again (--api-key-env is stored, being only a name).`

// openModel turns the --model, --base-url and --api-key flags into a model
// and the model ID to send. Every problem with them is a usage error; no
// message ever contains the key. logger receives the provider's retries.
func openModel(cfg *runConfig, logger *slog.Logger) (model.Model, string, error) {
	spec := cfg.model
	kind, name, ok := strings.Cut(spec, ":")
	if !ok || name == "" {
		return nil, "", usageErr("run: --model %q: want KIND:NAME, e.g. script:PATH, openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5", spec)
	}
	switch kind {
	case "script":
		if cfg.baseURL != "" || cfg.apiKey != "" || cfg.apiKeyEnv != "" {
			return nil, "", usageErr("run: --base-url, --api-key and --api-key-env are for openai: and anthropic: models, not script:")
		}
		m, err := scripted.Load(name)
		if err != nil {
			return nil, "", usageErr("run: --model: %v", err)
		}
		return m, name, nil
	case "openai":
		base := cmp.Or(cfg.baseURL, openai.DefaultBaseURL)
		envKey, envVar := openai.KeyFromEnv(base)
		key, err := apiKey(cfg, base, envKey, envVar)
		if err != nil {
			return nil, "", err
		}
		m, err := openai.New(&openai.Options{BaseURL: base, APIKey: key, Model: name, Logger: logger})
		if err != nil {
			return nil, "", usageErr("run: --base-url: %v", err)
		}
		return m, name, nil
	case "anthropic":
		base := cmp.Or(cfg.baseURL, anthropic.DefaultBaseURL)
		envKey, envVar := anthropic.KeyFromEnv()
		key, err := apiKey(cfg, base, envKey, envVar)
		if err != nil {
			return nil, "", err
		}
		m, err := anthropic.New(&anthropic.Options{BaseURL: base, APIKey: key, Model: name, Logger: logger})
		if err != nil {
			return nil, "", usageErr("run: --base-url: %v", err)
		}
		return m, name, nil
	}
	return nil, "", usageErr("run: --model %q: unknown kind %q (known: script, openai, anthropic)", spec, kind)
}

// apiKey returns the key to send to the server at base: --api-key, else the
// variable --api-key-env names (unset or empty is a usage error), else, when
// base is the hosted service the vendor's variable belongs to, envKey (read
// from envVar). A vendor's key is never sent to another server. A hosted
// service with no key is a usage error naming envVar; another server (a
// local Ollama) may need none.
func apiKey(cfg *runConfig, base, envKey, envVar string) (string, error) {
	if cfg.apiKey != "" {
		return cfg.apiKey, nil
	}
	if cfg.apiKeyEnv != "" {
		if k := os.Getenv(cfg.apiKeyEnv); k != "" {
			return k, nil
		}
		return "", usageErr("run: --api-key-env %s: the variable is unset or empty", cfg.apiKeyEnv)
	}
	if !hostedService(base) {
		return "", nil
	}
	if envKey != "" {
		return envKey, nil
	}
	return "", usageErr("run: no API key for %s: set %s or pass --api-key", hostOf(base), envVar)
}

// hostedService reports whether base is one of the hosted APIs tollgate
// knows, which always want a key.
func hostedService(base string) bool {
	h := hostOf(base)
	for _, svc := range []string{openai.DefaultBaseURL, openai.OpenRouterBaseURL, anthropic.DefaultBaseURL} {
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
