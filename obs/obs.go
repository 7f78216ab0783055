// Package obs holds what every game's observation shares: named sections
// of a fixed-size tensor of small integers (one uint8 each), the
// bit-packed transport form (Packing, PackBits, UnpackBits) and writer
// helpers. Each game's encoder (env/card, env/duel, ...) builds on it. It
// must not do I/O or know about HTTP, msgpack or configuration.
package obs

// Section is one named block of the observation.
type Section struct {
	Name   string
	Offset int
	Shape  []int
	Min    int
	Max    int
	Doc    string
}

// Size is the number of elements in the section.
func (s Section) Size() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}
