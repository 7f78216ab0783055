package card

import "testing"

// TestEncodeBitsFollowsTheLayout: EncodeBits is written for one section
// order; a layout that adds, drops or moves a section fails here first.
func TestEncodeBitsFollowsTheLayout(t *testing.T) {
	for p := MinPlayers; p <= MaxPlayers; p++ {
		l := NewLayout(p)
		if len(l.Sections) != len(encodeBitsOrder) {
			t.Fatalf("NewLayout(%d) has %d sections, EncodeBits is written for %d", p, len(l.Sections), len(encodeBitsOrder))
		}
		for i, s := range l.Sections {
			if s.Name != encodeBitsOrder[i] {
				t.Errorf("NewLayout(%d) section %d = %q, EncodeBits expects %q", p, i, s.Name, encodeBitsOrder[i])
			}
		}
	}
}
