// Package pgtest gives tests a fresh PostgreSQL database of their own.
//
// The server is started once for the whole test command by
// scripts/postgres.sh (scripts/test.sh does it), which installs PostgreSQL
// from Debian's packages when it is missing and exports its admin URL as
// TOLLGATE_TEST_POSTGRES_URL. Each call of [Database] creates a new database
// on that server and drops it when the test ends, so tests and test packages
// never see each other's tables.
//
// A test that needs PostgreSQL fails, rather than skips, when the variable is
// unset: a missing server must not pass silently. Setting
// TOLLGATE_TEST_POSTGRES=skip skips those tests on purpose, and says so.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the admin URL of the test server,
// for example postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable.
const EnvURL = "TOLLGATE_TEST_POSTGRES_URL"

// EnvSkip names the variable that, set to "skip", skips PostgreSQL tests
// knowingly instead of failing them when no server is configured.
const EnvSkip = "TOLLGATE_TEST_POSTGRES"

// AdminURL returns the admin URL of the test server. It fails t when none is
// configured (see the package doc), or skips t when EnvSkip is "skip".
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv(EnvSkip) == "skip" {
			t.Skipf("PostgreSQL tests skipped on purpose (%s=skip)", EnvSkip)
		}
		t.Fatalf("this test needs PostgreSQL: run it through scripts/test.sh, or start a server with "+
			"`sh scripts/postgres.sh start DIR` and set %s to the URL it prints (%s=skip skips such tests)", EnvURL, EnvSkip)
	}
	return u
}

// Database creates an empty database for t on the test server and returns
// its URL (the admin URL with the database name replaced). The database is
// dropped, with any sessions still connected to it, when t ends.
func Database(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "tollgate_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("pgtest: connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

// String describes the configured server for messages, without credentials.
func String() string {
	u, err := url.Parse(os.Getenv(EnvURL))
	if err != nil || u.Host == "" {
		return "no PostgreSQL test server"
	}
	return fmt.Sprintf("PostgreSQL at %s", u.Host)
}
