package server

import "testing"

// The Host check runs on every request, the step's included: it allocates
// nothing.
func TestHostCheckAllocatesNothing(t *testing.T) {
	r := newSiteRules(Config{Addr: "0.0.0.0:8080", CrossSite: CrossSiteConfig{AllowedHosts: []string{"dg.example.org"}}})
	for _, h := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "dg.example.org", "10.0.0.1:80", "attacker.example:8080"} {
		if n := testing.AllocsPerRun(100, func() { r.hostAllowed(h) }); n != 0 {
			t.Errorf("hostAllowed(%q) allocates %v times, want 0", h, n)
		}
	}
}
