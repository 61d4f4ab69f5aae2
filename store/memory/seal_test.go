package memory_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/storetest"
)

func TestMemoryLayerSeal(t *testing.T) {
	m := memory.New(nil)
	storetest.RunLayerSeal(t, m, func(t *testing.T, f storetest.Forgery) {
		memory.ForgeLayer(m, "acme", f.AlterID, f.AlterText, f.Insert)
	})
}
