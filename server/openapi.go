package server

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

// openAPI is the API as an OpenAPI 3.1 document: every route, request and
// answer schema, error and auth. It is the one machine-readable definition;
// docs/openapi.json is a copy that a test keeps identical, and another test
// checks its paths against the routes registered here, both ways.
//
//go:embed openapi.json
var openAPI []byte

// openapi answers GET /v1/openapi.json without auth, like healthz: the
// document names routes and fields, nothing about the sessions.
func (s *Server) openapi(c *gin.Context) {
	h := c.Writer.Header()
	h["Content-Type"] = ctJSON
	h["Content-Length"] = []string{strconv.Itoa(len(openAPI))}
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(openAPI)
}
