package storeimpl

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// MaxPrincipalName is the longest principal name, in bytes, that Decide
// accepts (in By and Actor).
const MaxPrincipalName = 512

// checkAnswer reports an answer whose principals a store would not keep.
func checkAnswer(d store.Answer) error {
	if d.By.IsZero() {
		return fmt.Errorf("%w: the answer names no principal (By)", store.ErrInvalid)
	}
	for _, p := range []struct {
		field string
		p     tool.Principal
	}{{"By", d.By}, {"Actor", d.Actor}} {
		if p.field == "Actor" && p.p.IsZero() {
			continue
		}
		if !p.p.Kind.Valid() {
			return fmt.Errorf("%w: answer %s: kind %q is not hook, rule, autonomy, person, runtime or flag", store.ErrInvalid, p.field, p.p.Kind)
		}
		if len(p.p.Name) > MaxPrincipalName {
			return fmt.Errorf("%w: answer %s: name of %d bytes, more than %d", store.ErrInvalid, p.field, len(p.p.Name), MaxPrincipalName)
		}
		if !utf8.ValidString(p.p.Name) || strings.IndexFunc(p.p.Name, unicode.IsControl) >= 0 {
			return fmt.Errorf("%w: answer %s: name %q is not UTF-8 text without control characters", store.ErrInvalid, p.field, p.p.Name)
		}
	}
	return nil
}

// PrincipalText is how a principal is kept in a text column: its text form
// ("person:alice"), "" for the zero Principal. For implementations; read it
// back with [PrincipalsFromText].
func PrincipalText(p tool.Principal) string {
	if p.IsZero() {
		return ""
	}
	return p.String()
}

// legacyAdmin matches how an administrator's answer for someone else was
// kept before the actor had its own field: "alice (by root with --admin)".
var legacyAdmin = regexp.MustCompile(`^(.+) \(by (.+) with --admin\)$`)

// PrincipalsFromText reads a decision's principals back from their text
// columns (see [PrincipalText]), for implementations. Text that stores of
// earlier versions kept is read too: a bare name is a person's
// ([tool.PrincipalOf]), and one name that recorded an administrator's answer
// for someone, "alice (by root with --admin)", is read as by person:alice,
// actor person:root.
func PrincipalsFromText(by, actor string) (tool.Principal, tool.Principal) {
	var b, a tool.Principal
	if actor != "" {
		a = tool.PrincipalOf(actor)
	}
	if by == "" {
		return b, a
	}
	if kind, _, ok := strings.Cut(by, ":"); !ok || !tool.PrincipalKind(kind).Valid() {
		if m := legacyAdmin.FindStringSubmatch(by); m != nil && actor == "" {
			return tool.PrincipalOf(m[1]), tool.Principal{Kind: tool.PrincipalPerson, Name: m[2]}
		}
	}
	return tool.PrincipalOf(by), a
}
