package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/serveconfig"
)

// oneTenantForServer refuses, for `tollgate gateway --server`, a --tokens
// file whose clients belong to several tenants: the gateway asks on the
// server with its one --token-file token, so every client's asks would
// land in that token's tenant, before its approvers, whatever the
// client's own tenant.
func oneTenantForServer(tokensFile string, tokens *serveconfig.Tokens) error {
	ts := tokens.Tenants()
	if len(ts) <= 1 {
		return nil
	}
	return fmt.Errorf("--tokens %s holds tokens of tenants %s, and --server asks every call in the one tenant of the --token-file token, before that tenant's approvers: run one gateway per tenant, each with a tokens file of that tenant and a server token of it", tokensFile, quotedList(ts))
}

// quotedList is `"a"`, `"a" and "b"`, `"a", "b" and "c"`.
func quotedList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
