// Package configs carries the server's default configuration, so dgserver
// runs with no file at all. It holds data only.
package configs

import _ "embed"

// Default is default.yaml: every key the server knows, with its default.
//
//go:embed default.yaml
var Default []byte
