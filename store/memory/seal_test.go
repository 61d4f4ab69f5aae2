package memory_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/storeimpl/storeimpltest"
	"github.com/tollgate-dev/tollgate/store/memory"
)

func TestMemoryLayerSeal(t *testing.T) {
	m := memory.New(nil)
	storeimpltest.RunLayerSeal(t, m, func(t *testing.T, f storeimpltest.Forgery) {
		memory.ForgeLayer(m, "acme", f.AlterID, f.AlterText, f.Insert)
	})
}
