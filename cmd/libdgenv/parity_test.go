package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/davidgoliath/dgenv/server"
	"github.com/davidgoliath/dgenv/server/wire"
)

// TestServerAndLibraryRefuseABadRequestAlike: the same bad create request
// gets the same code, message and details (field, games, bots) from the
// server (POST /v1/sessions) and from the in-process library (dg_vec_new),
// both planned by env.PlanSession. The cases are those no cap of either
// front end decides.
func TestServerAndLibraryRefuseABadRequestAlike(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Sessions.DefaultOpponent = ""
	srv, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for _, body := range []string{
		`{"game":{"name":"chess"}}`,
		`{"game":{"players":9}}`,
		`{"game":{"name":"duel","deals":2}}`,
		`{"reward":"x"}`,
		`{"obs_dtype":"<f8"}`,
		`{"packing":"zip"}`,
		`{"packing":"bits","obs_dtype":"<f4"}`,
		`{"opponent":"random","opponents":[null,"random","random","random"]}`,
		`{"opponents":[null,"nobody","random","random"]}`,
		`{"opponents":[null,"random"]}`,
		`{"learner_seats":[0],"opponent":"nobody"}`,
		`{"learner_seats":[7],"opponent":"random"}`,
		`{"learner_seats":[0]}`,
		`{"learner_seats":[0,0],"opponent":"random"}`,
	} {
		t.Run(body, func(t *testing.T) {
			w := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/sessions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			srv.Handler().ServeHTTP(w, req)
			var answer struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil || answer.Error == nil {
				t.Fatalf("server: %d %s (%v), want an error", w.Code, w.Body, err)
			}
			fromServer := wire.Error{Details: map[string]any{}}
			for k, v := range answer.Error {
				switch k {
				case "code":
					fromServer.Code, _ = v.(string)
				case "message":
					fromServer.Message, _ = v.(string)
				default:
					fromServer.Details[k] = v
				}
			}
			_, e := newVecEnv([]byte(body))
			if e == nil {
				t.Fatal("the library made the batch")
			}
			b, _ := json.Marshal(wire.ErrorOf(e))
			var fromLibrary wire.Error
			if err := json.Unmarshal(b, &fromLibrary); err != nil {
				t.Fatal(err)
			}
			if fromLibrary.Details == nil {
				fromLibrary.Details = map[string]any{}
			}
			if !reflect.DeepEqual(fromServer, fromLibrary) {
				t.Errorf("server:  %+v\nlibrary: %+v", fromServer, fromLibrary)
			}
			if fromServer.Code != "bad_request" || fromServer.Details["field"] == nil {
				t.Errorf("server: %+v, want a bad_request naming a field", fromServer)
			}
		})
	}
}
