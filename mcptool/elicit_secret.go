package mcptool

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Form mode must not ask for sensitive information (MCP specification
// 2025-11-25, "Elicitation: Security considerations": servers "MUST NOT
// use form mode elicitation to request sensitive information"). tollgate
// declines, without asking the person, a form whose message, field names,
// titles, descriptions, choices' titles or defaults name a secret. The
// text is normalised first (normalize), so that neither case, separators,
// compatibility forms ("ｐａｓｓｗｏｒｄ"), invisible characters nor
// look-alike letters ("pаssword" with a Cyrillic а) hide a word. A field
// or message that merely mentions one ("max tokens") is declined as
// well: failing closed.
var (
	// secretWords are matched anywhere in the text once it is normalised
	// and stripped of everything but letters and digits ("Pass_Word" is
	// "password").
	secretWords = []string{
		"password", "passwd", "passwort", "motdepasse", "contrasena", "wachtwoord", "senha",
		"passphrase", "passcode", "secret", "token", "apikey", "accesskey", "sessionkey", "privatekey", "secretkey",
		"sshkey", "signingkey", "credential", "seedphrase", "recoveryphrase", "recoverycode", "backupcode",
		"mnemonic", "verificationcode", "authcode", "authenticationcode", "securitycode", "onetimecode",
		"2facode", "mfacode", "cardnumber", "creditcard", "debitcard", "socialsecurity", "bankaccount", "iban",
	}
	// secretShort are matched as whole words only ("pin", not "shipping";
	// "pat", not "path").
	secretShort = []string{"pin", "pat", "pwd", "pw", "cvv", "cvc", "ssn", "otp", "totp", "2fa", "mfa"}
)

// confusables maps letters that look like ASCII ones (Cyrillic, Greek and
// a few others) to those: a small table of the common ones, after NFKC.
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c',
	'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ɡ': 'g',
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
	'υ': 'u', 'χ': 'x', 'ω': 'w', 'ı': 'i', 'ȷ': 'j', 'ℓ': 'l', 'ѡ': 'w', 'һ': 'h', 'ԑ': 'e', 'ս': 'u',
	'օ': 'o', 'ց': 'g', 'զ': 'q',
}

// normalize returns s as the secret words are matched: NFKC, accents
// dropped (the marks of NFD: "contraseña" is "contrasena"), lower case,
// look-alike letters mapped to ASCII, and every run of characters that are
// neither letters nor digits (spaces, punctuation, invisible format
// characters) made one space; a change from lower to upper case starts a
// word ("githubPat" is "github pat").
func normalize(s string) string {
	s = norm.NFD.String(norm.NFKC.String(s))
	var b strings.Builder
	prevLower, space := false, true
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Mn, r):
			continue // invisible, or an accent: no break in the word
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower && !space {
				b.WriteByte(' ')
			}
			prevLower = unicode.IsLower(r)
			r = unicode.ToLower(r)
			if c, ok := confusables[r]; ok {
				r = c
			}
			b.WriteRune(r)
			space = false
		default:
			if !space {
				b.WriteByte(' ')
			}
			prevLower, space = false, true
		}
	}
	return strings.TrimSpace(b.String())
}

// secretIn returns the secret word s names once normalised, or "".
func secretIn(s string) string {
	n := normalize(s)
	if n == "" {
		return ""
	}
	for _, w := range strings.Fields(n) {
		if slices.Contains(secretShort, w) {
			return w
		}
	}
	compact := strings.ReplaceAll(n, " ", "")
	for _, w := range secretWords {
		if strings.Contains(compact, w) {
			return w
		}
	}
	return ""
}

// asksSecret reports whether s names a secret (see secretWords).
func asksSecret(s string) bool { return secretIn(s) != "" }

// secretError is a form that asks for a secret: declined, with this reason.
type secretError struct{ what, word string }

func (e *secretError) Error() string {
	return fmt.Sprintf("the form asks for a secret (%s names %q), which form mode must not (MCP specification, Elicitation: security considerations); use URL mode", e.what, e.word)
}

// formSecret returns a *secretError when the message or the form schema
// (JSON) names a secret: a field's name, title, description, format
// ("password"), default, or the titles of its choices (enumNames, oneOf
// and anyOf titles, an array's items).
func formSecret(message string, schema []byte) error {
	if w := secretIn(message); w != "" {
		return &secretError{what: "the message", word: w}
	}
	var s struct {
		Title       string                     `json:"title"`
		Description string                     `json:"description"`
		Properties  map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil // checkFormSchema refuses it
	}
	for what, text := range map[string]string{"the form's title": s.Title, "the form's description": s.Description} {
		if w := secretIn(text); w != "" {
			return &secretError{what: what, word: w}
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		what := fmt.Sprintf("field %q", name)
		if w := secretIn(name); w != "" {
			return &secretError{what: what, word: w}
		}
		if w := fieldSecret(s.Properties[name], 0); w != "" {
			return &secretError{what: what, word: w}
		}
	}
	return nil
}

// fieldSecret returns the secret word a field's schema names, or "".
func fieldSecret(raw json.RawMessage, depth int) string {
	if depth > 4 {
		return ""
	}
	var f struct {
		Title       string            `json:"title"`
		Description string            `json:"description"`
		Format      string            `json:"format"`
		Default     any               `json:"default"`
		EnumNames   []string          `json:"enumNames"`
		Enum        []any             `json:"enum"`
		Const       any               `json:"const"`
		OneOf       []json.RawMessage `json:"oneOf"`
		AnyOf       []json.RawMessage `json:"anyOf"`
		Items       json.RawMessage   `json:"items"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return ""
	}
	if f.Format == "password" {
		return "password"
	}
	// The choices' values are shown to the person too (as the labels of a
	// question), and so is a default.
	texts := append([]string{f.Title, f.Description}, f.EnumNames...)
	for _, v := range append([]any{f.Default, f.Const}, f.Enum...) {
		switch d := v.(type) {
		case string:
			texts = append(texts, d)
		case []any:
			for _, v := range d {
				if s, ok := v.(string); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	for _, t := range texts {
		if w := secretIn(t); w != "" {
			return w
		}
	}
	for _, sub := range append(append(f.OneOf, f.AnyOf...), f.Items) {
		if len(sub) > 0 {
			if w := fieldSecret(sub, depth+1); w != "" {
				return w
			}
		}
	}
	return ""
}
