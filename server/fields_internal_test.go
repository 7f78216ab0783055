package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// JSON and msgpack accept exactly the same request fields: every json tag
// is a field msgpack decodes, and a name that is no tag is refused by both.
func TestJSONAndMsgpackAcceptTheSameFields(t *testing.T) {
	for _, req := range []any{&createRequest{}, &resetRequest{}, &stepRequest{}} {
		typ := reflect.TypeOf(req).Elem()
		var names []string
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			t.Fatalf("%s: no fields", typ)
		}
		for _, name := range append(names, "no_such_field") {
			want := name != "no_such_field"
			for _, f := range []format{formatJSON, formatMsgpack} {
				body := []byte(`{"` + name + `": null}`)
				if f == formatMsgpack {
					var err error
					if body, err = msgpack.Marshal(map[string]any{name: nil}); err != nil {
						t.Fatal(err)
					}
				}
				dst := reflect.New(typ).Interface()
				if s, ok := dst.(*stepRequest); ok {
					s.Actions = &actionsField{dst: make([]int32, 1), numActions: 90}
				}
				e := decode(f, body, dst)
				unknown := e != nil && strings.Contains(e.Message, "unknown field")
				if unknown == want {
					t.Errorf("%s field %q over %v: accepted %v, want %v (%v)", typ.Name(), name, f, !unknown, want, e)
				}
			}
		}
	}
}
