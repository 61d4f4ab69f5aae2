package dbosengine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
)

// Config is the YAML file of `tollgate worker --config FILE`, which a
// server that enqueues runs can read too:
//
//	database: sqlite:/var/lib/tollgate/dbos.db   # or postgres://…; or databaseEnv
//	databaseEnv: TOLLGATE_DBOS_URL               # the variable holding the URL (keeps a password out of the file)
//	store: postgres://tollgate@db/tollgate        # tollgate's store of runs and approvals on PostgreSQL; or storeEnv
//	stateDir: /var/lib/tollgate                  # else the SQLite store of this directory (one machine)
//	storeKeyFile: /etc/tollgate/decision.key     # the store's decision key, the server's (default: decision.key in stateDir)
//	queue: tollgate-runs
//	concurrency: 64                              # runs this worker drives at once, waiting ones included
//	executorId: worker-a                         # default: hostname, PID and a random suffix
//	heartbeat: 5s
//	deadAfter: 30s
//	queuePoll: 50ms
//	answerPoll: 30s
//
// Unknown keys are errors; the file is at most [MaxConfigSize] bytes.
type Config struct {
	Database    string `yaml:"database"`
	DatabaseEnv string `yaml:"databaseEnv"`
	Store       string `yaml:"store"`
	StoreEnv    string `yaml:"storeEnv"`
	StateDir    string `yaml:"stateDir"`
	// StoreKeyFile is the file of the store's decision key
	// (storeimpl.LoadDecisionKey), shared with the server; a relative path is
	// resolved against the file's directory.
	StoreKeyFile string `yaml:"storeKeyFile"`
	Queue        string `yaml:"queue"`
	Concurrency  int    `yaml:"concurrency"`
	ExecutorID   string `yaml:"executorId"`
	Heartbeat    string `yaml:"heartbeat"`
	DeadAfter    string `yaml:"deadAfter"`
	QueuePoll    string `yaml:"queuePoll"`
	AnswerPoll   string `yaml:"answerPoll"`
}

// MaxConfigSize is the largest configuration file read (64 KiB).
const MaxConfigSize = 64 << 10

// LoadConfig reads and checks the configuration file at path. Errors name
// the file and, for a YAML error or an unknown key, the line and column;
// for a bad value, the key and the line and column of the value
// (FILE:LINE:COL: key: problem). A relative stateDir or SQLite path is resolved
// against the file's directory.
func LoadConfig(path string) (Config, error) {
	lim := bounded.Limits{MaxBytes: MaxConfigSize, MaxDepth: 4}
	src, err := configread.ReadFile(path, lim)
	if err != nil {
		return Config{}, err
	}
	var c Config
	f, err := configread.DecodeYAML(path, src, &c, lim)
	if err != nil {
		return Config{}, err
	}
	base := filepath.Dir(path)
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		c.StateDir = filepath.Join(base, c.StateDir)
	}
	if c.StoreKeyFile != "" && !filepath.IsAbs(c.StoreKeyFile) {
		c.StoreKeyFile = filepath.Join(base, c.StoreKeyFile)
	}
	if p, ok := strings.CutPrefix(c.Database, "sqlite:"); ok && p != "" && !filepath.IsAbs(p) && p != ":memory:" {
		c.Database = "sqlite:" + filepath.Join(base, p)
	}
	if _, err := c.Options(); err != nil {
		if ke, ok := errors.AsType[*keyError](err); ok {
			return Config{}, configread.Errorf(path, configread.PathPos(f, "$."+ke.key), ke.key, "%s", strings.TrimPrefix(err.Error(), ke.key+": "))
		}
		return Config{}, configread.Errorf(path, configread.Pos{}, "", "%v", err)
	}
	return c, nil
}

// keyError is an error of Options about the value of one key of the file.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

func keyErrorf(key, format string, args ...any) error {
	return &keyError{key: key, err: fmt.Errorf(format, args...)}
}

// StoreURL returns the PostgreSQL URL of tollgate's store (store, or the
// variable storeEnv names), or "" for the SQLite store of StateDir.
func (c Config) StoreURL() (string, error) {
	return urlOf("store", c.Store, c.StoreEnv, false)
}

func urlOf(key, val, env string, required bool) (string, error) {
	switch {
	case val != "" && env != "":
		return "", keyErrorf(key, "%s and %sEnv are both set; give one", key, key)
	case env != "":
		v := os.Getenv(env)
		if v == "" {
			return "", keyErrorf(key+"Env", "%sEnv: the variable %s is not set", key, env)
		}
		return v, nil
	case val == "" && required:
		return "", fmt.Errorf("%s: required (postgres://… or sqlite:FILE), or %sEnv", key, key)
	}
	return val, nil
}

// Options returns the engine options the configuration gives (Store,
// Builder, Worker, Middleware and Logger are the caller's). Errors name the
// key at fault.
func (c Config) Options() (Options, error) {
	o := Options{Queue: c.Queue, Concurrency: c.Concurrency, ExecutorID: c.ExecutorID}
	u, err := urlOf("database", c.Database, c.DatabaseEnv, true)
	if err != nil {
		return o, err
	}
	o.DatabaseURL = u
	su, err := c.StoreURL()
	if err != nil {
		return o, err
	}
	if su != "" && !strings.HasPrefix(su, "postgres://") && !strings.HasPrefix(su, "postgresql://") {
		return o, keyErrorf("store", "store: want a PostgreSQL URL, postgres://USER@HOST:PORT/DATABASE (leave it out for the SQLite store of stateDir)")
	}
	if c.Concurrency < 0 {
		return o, keyErrorf("concurrency", "concurrency: %d is negative", c.Concurrency)
	}
	for _, d := range []struct {
		key, val string
		dst      *time.Duration
	}{
		{"heartbeat", c.Heartbeat, &o.Heartbeat}, {"deadAfter", c.DeadAfter, &o.DeadAfter},
		{"queuePoll", c.QueuePoll, &o.QueuePoll}, {"answerPoll", c.AnswerPoll, &o.AnswerPoll},
	} {
		if d.val == "" {
			continue
		}
		v, err := time.ParseDuration(d.val)
		if err != nil || v <= 0 {
			return o, keyErrorf(d.key, "%s: %q is not a positive duration such as \"5s\"", d.key, d.val)
		}
		*d.dst = v
	}
	return o, nil
}
