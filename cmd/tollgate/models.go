package main

import (
	"errors"

	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/runs"
)

// modelKinds is the --model help: the kinds runbuild.OpenModel knows, which
// opens the models of `tollgate run`, `resume`, `serve` and `worker`.
const modelKinds = `Models (--model KIND:NAME):
  script:PATH       replays a YAML script of assistant turns (offline)
  openai:MODEL      OpenAI Chat Completions, or any server that speaks it
                    (OpenRouter, Ollama, vLLM, LM Studio) with --base-url
  anthropic:MODEL   Anthropic Messages API
The key comes from the variable --api-key-env names, else, for the hosted
service it belongs to only, from OPENAI_API_KEY (api.openai.com),
OPENROUTER_API_KEY (openrouter.ai) or ANTHROPIC_API_KEY (api.anthropic.com):
a vendor's key is never sent to another --base-url. --api-key overrides them,
but a command line is visible to every process of the machine: prefer a
variable. The hosted services
require a key; other servers may need none. The key is never printed, logged
or stored with a halted run: 'tollgate resume' reads it from the environment
again (--api-key-env is stored, being only a name).`

// keyFlagError returns runbuild.OpenModel's missing key (a runbuild.KeyError) as
// the usage error of run's flags, which name how a key is given: the
// service's variable, or the one --api-key-env names. It does not point to
// --api-key: a key on a command line is visible to every process of the
// machine. It returns nil for any other error.
func keyFlagError(err error) error {
	ke, ok := errors.AsType[*runbuild.KeyError](err)
	if !ok {
		return nil
	}
	if ke.Named {
		return usageErr("run: --api-key-env %s: the variable is unset or empty", ke.Variable)
	}
	return usageErr("run: no API key for %s: export %s=... (or name another variable with --api-key-env)", ke.Host, ke.Variable)
}

// scriptKeyError refuses --api-key (given to resume) for a run whose model
// is a script, which takes no key, as run refuses it with its flags.
func scriptKeyError(ref runs.ModelRef, apiKey string) error {
	if ref.Provider == "script" && apiKey != "" {
		return usageErr("run: --base-url, --api-key and --api-key-env are for openai: and anthropic: models, not script:")
	}
	return nil
}
