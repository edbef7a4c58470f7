package standin

import (
	"fmt"
	"testing"
)

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := newTailBuffer(10)
	for i := range 30 {
		fmt.Fprintf(b, "%d", i%10)
	}
	if got := b.String(); got != "0123456789" {
		t.Errorf("got %q, want the last 10 bytes", got)
	}
}
