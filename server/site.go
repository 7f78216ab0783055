package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/davidgoliath/dgenv/env"
)

// Cross-site requests and DNS rebinding.
//
// A server on localhost with no token is reachable by every page the
// user's browser opens. Two holes, and what closes them:
//
//   - A page on another origin may send "simple" requests without asking:
//     a POST whose body is text/plain, a form, or a Blob of no type. The
//     browser hides the answer, but the request runs (a session is
//     created). So every body-carrying request must name JSON or msgpack
//     as its Content-Type (415 otherwise): a cross-origin page can only
//     send those after a CORS preflight, which this server never grants.
//     Browsers also send Origin with such a request; one that is neither
//     this server's own origin nor a configured one is refused (403).
//   - DNS rebinding: attacker.example first resolves to the attacker, then
//     to 127.0.0.1, and its page reads the API as same-origin. Its
//     requests carry "Host: attacker.example", so a Host that is not a
//     loopback name, the listening address or a configured host is
//     refused (403). When the server listens on every interface (0.0.0.0,
//     ::) any IP literal is accepted as the listening address: a rebinding
//     page is always reached under a DNS name, never an IP.
//
// On a Unix socket Host is not checked: no browser can connect to one (its
// owner-only file mode is the guard), clients name it as they like
// ("localhost", "unix"), and a reverse proxy in front of it rewrites Host
// anyway, so the check belongs to the proxy. Origin and Content-Type are
// checked there as everywhere: a proxy passes a browser's Origin on.

// siteRules is what sameSite accepts, fixed at New.
type siteRules struct {
	// unix: the server listens on a Unix socket (any Host). listenHost is
	// the configured listening host; anyIP is true when it is unspecified
	// (every interface).
	unix       bool
	listenHost string
	anyIP      bool
	hosts      map[string]bool // cross_site.allowed_hosts, lower case
	origins    map[string]bool // cross_site.allowed_origins, normalised
}

func newSiteRules(cfg Config) siteRules {
	r := siteRules{hosts: map[string]bool{}, origins: map[string]bool{}}
	network, addr := ListenAddr(cfg.Addr)
	r.unix = network == "unix"
	if !r.unix {
		host, _, _ := net.SplitHostPort(addr) // Validate checked it
		r.listenHost = strings.ToLower(host)
		ip := net.ParseIP(host)
		r.anyIP = host == "" || (ip != nil && ip.IsUnspecified())
	}
	for _, h := range cfg.CrossSite.AllowedHosts {
		r.hosts[strings.ToLower(h)] = true
	}
	for _, o := range cfg.CrossSite.AllowedOrigins {
		n, _ := normalOrigin(o) // Validate checked it
		r.origins[n] = true
	}
	return r
}

// sameSite refuses what a page of another site could make a browser send:
// a Host that is not this server's and an Origin of another site. It runs
// before auth, on every route. (A body that is not explicitly JSON or
// msgpack is refused by requestFormat, in the handlers that read one.)
func (s *Server) sameSite(c *gin.Context) {
	r := c.Request
	if !s.site.hostAllowed(r.Host) {
		s.refuse(c, env.Errorf(env.CodeForbidden, "Host %q is not this server's: want a loopback name (localhost, 127.0.0.1, [::1]), the listening address or one of cross_site.allowed_hosts", r.Host))
		return
	}
	if o, ok := r.Header["Origin"]; ok && !s.site.originAllowed(strings.Join(o, ","), r) {
		s.refuse(c, env.Errorf(env.CodeForbidden, "Origin %q is not this server's own (%s) nor one of cross_site.allowed_origins", strings.Join(o, ","), ownOrigin(r)))
		return
	}
}

func (s *Server) refuse(c *gin.Context, e *env.Error) {
	// As for a wrong token: close rather than read an unwanted body, which
	// could come as slowly as its sender likes.
	c.Header("Connection", "close")
	dropBody(c.Request)
	s.fail(c, responseFormat(c.Request, formatJSON), e)
	c.Abort()
}

// hasBody says whether a request carries (or, by its method, may carry) a
// body: POST, PUT and PATCH always, others when they declare one.
func hasBody(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return r.ContentLength != 0
}

func unsupportedType(ct string) *env.Error {
	if ct == "" {
		return env.Errorf(env.CodeUnsupportedMediaType, "no Content-Type: a request body must be sent as %s or %s", mimeJSON, mimeMsgpack)
	}
	return env.Errorf(env.CodeUnsupportedMediaType, "Content-Type %q: want %s or %s", ct, mimeJSON, mimeMsgpack)
}

// hostAllowed checks a request's Host (name and optional port; the port is
// not checked: a proxy may forward another one).
func (r siteRules) hostAllowed(hostport string) bool {
	host := hostName(hostport)
	if r.unix {
		return true
	}
	if host == "" {
		return false
	}
	host = strings.ToLower(host) // no copy when already lower case
	// Only what may be an IP is parsed (netip: no allocation; a failed
	// parse would allocate its error on every request under a name).
	var ip netip.Addr
	isIP := false
	if c := host[0]; ('0' <= c && c <= '9') || strings.IndexByte(host, ':') >= 0 {
		var err error
		ip, err = netip.ParseAddr(host)
		isIP = err == nil
	}
	switch {
	case host == "localhost", isIP && ip.IsLoopback(), r.hosts[host]:
		return true
	case r.listenHost != "" && host == r.listenHost:
		return true
	}
	return r.anyIP && isIP
}

// hostName is the name of a Host header without its port and brackets
// ("[::1]:80" -> "::1"), cut by hand: net.SplitHostPort allocates its
// error for a Host without a port.
func hostName(hostport string) string {
	if rest, ok := strings.CutPrefix(hostport, "["); ok {
		if i := strings.IndexByte(rest, ']'); i >= 0 && (i == len(rest)-1 || rest[i+1] == ':') {
			return rest[:i]
		}
		return hostport // malformed: matches nothing
	}
	if i := strings.IndexByte(hostport, ':'); i >= 0 && strings.LastIndexByte(hostport, ':') == i {
		return hostport[:i]
	}
	return hostport
}

// originAllowed accepts the server's own origin (the scheme of this
// connection and the request's Host, already checked) and the configured
// ones. "null" (a sandboxed frame, a file) and anything unparsable are
// refused.
func (r siteRules) originAllowed(origin string, req *http.Request) bool {
	o, ok := normalOrigin(origin)
	if !ok {
		return false
	}
	if own, ok := normalOrigin(ownOrigin(req)); ok && o == own {
		return true
	}
	return r.origins[o]
}

// ownOrigin is the origin a page served by this server for req has.
func ownOrigin(req *http.Request) string {
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + req.Host
}

// normalOrigin reads "scheme://host[:port]" (nothing else) and writes it in
// lower case with the scheme's default port made explicit.
func normalOrigin(o string) (string, bool) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}
