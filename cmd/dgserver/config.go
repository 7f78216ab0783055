package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/davidgoliath/dgenv/configs"
	"github.com/davidgoliath/dgenv/server"
)

// envPrefix starts every environment variable the server reads.
const envPrefix = "DGSERVER_"

// loadConfig builds the server's Config from, lowest priority first: the
// embedded configs/default.yaml, the --config file, DGSERVER_* variables in
// environ, and flags. Viper stays here; the server gets plain values. An
// unknown key (in the file or as a DGSERVER_ variable) or an invalid value
// is an error that names it.
func loadConfig(args, environ []string) (server.Config, error) {
	var cfg server.Config
	fs := pflag.NewFlagSet("dgserver", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	addr := fs.String("addr", "", "host:port to listen on (port 0 picks a free one); overrides addr")
	file := fs.String("config", "", "YAML configuration file (keys as in configs/default.yaml)")
	policies := fs.String("policies", "", "directory of trained policies (<name>.onnx) served as \"policy:<name>\"; overrides policies.dir")
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return cfg, fmt.Errorf("%w\nusage: dgserver [--config file.yaml] [--addr host:port] [--policies dir]\n%s", err, fs.FlagUsages())
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.Default)); err != nil {
		return cfg, fmt.Errorf("embedded default config: %w", err)
	}
	known := map[string]string{} // DGSERVER_LIMITS_MAX_SESSIONS -> limits.max_sessions
	for _, k := range v.AllKeys() {
		known[envPrefix+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))] = k
	}
	if *file != "" {
		v.SetConfigFile(*file)
		if err := v.MergeInConfig(); err != nil {
			return cfg, fmt.Errorf("config file %s: %w", *file, err)
		}
	}
	var unknown []string
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) {
			continue
		}
		k, ok := known[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		v.Set(k, val)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return cfg, fmt.Errorf("unknown environment variables %s (known: %s)", strings.Join(unknown, ", "), strings.Join(sortedKeys(known), ", "))
	}
	if fs.Changed("addr") {
		v.Set("addr", *addr)
	}
	if fs.Changed("policies") {
		v.Set("policies.dir", *policies)
	}
	if err := checkTypes(v, reflect.TypeOf(cfg), ""); err != nil {
		return cfg, fmt.Errorf("invalid configuration:\n%w", err)
	}
	if err := v.UnmarshalExact(&cfg); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return cfg, nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// checkTypes refuses what the decoder would silently misread: a number
// given for a duration (YAML's `read_timeout: 60` would be 60 ns; only 0 is
// unambiguous) and a fraction given for a count (`max_sessions: 2.7` would
// be 2). Strings (variables, flags, quoted values) are parsed strictly by
// the decoder itself. It walks t's mapstructure keys under prefix.
func checkTypes(v *viper.Viper, t reflect.Type, prefix string) error {
	var errs []error
	for i := range t.NumField() {
		f := t.Field(i)
		key := prefix + f.Tag.Get("mapstructure")
		if f.Type.Kind() == reflect.Struct {
			if err := checkTypes(v, f.Type, key+"."); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		raw := v.Get(key)
		var x float64
		switch n := raw.(type) {
		case int:
			x = float64(n)
		case int64:
			x = float64(n)
		case uint64:
			x = float64(n)
		case float64:
			x = n
		default:
			continue // strings and the rest: the decoder parses them and names the key
		}
		switch {
		case f.Type == durationType:
			if x != 0 {
				errs = append(errs, fmt.Errorf("%s = %v: a duration needs a unit (e.g. %vs or %vms); a bare number would be read as nanoseconds", key, raw, raw, raw))
			}
		case f.Type.Kind() >= reflect.Int && f.Type.Kind() <= reflect.Int64:
			if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32*float64(1<<31) {
				errs = append(errs, fmt.Errorf("%s = %v: want a whole number", key, raw))
			}
		}
	}
	return errors.Join(errs...)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
