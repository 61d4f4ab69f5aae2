// Package archtest holds the test that keeps tollgate's import graph in the
// shape docs/architecture.md draws: levels import only downward, siblings on one
// level do not import each other, and no package imports an adapter but the
// composition layers (cmd, internal/runbuild) and the uses adapterUses lists.
package archtest
