package store_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/storetest"
)

func TestMemoryLayerSeal(t *testing.T) {
	m := store.NewMemory(nil)
	storetest.RunLayerSeal(t, m, func(t *testing.T, f storetest.Forgery) {
		store.ForgeLayer(m, "acme", f.AlterID, f.AlterText, f.Insert)
	})
}
