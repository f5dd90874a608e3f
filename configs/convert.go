package configs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The converters turn a value as viper holds it (a typed flag's value, a
// string from the environment, a YAML scalar or list) into a kind's Go
// type, or say what was there instead.

// toStrings accepts a single string (from the environment or a scalar
// YAML value) as a one-element list, a []string (a repeated flag), or a
// YAML list whose items are all strings.
func toStrings(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil, nil
		}
		return []string{v}, nil
	case []string:
		return v, nil
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("want %v, got %s as item %d", Strings, describe(x), i)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("want %v, got %s", Strings, describe(v))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe names a value in an error: its type, and the value itself
// unless it is a section or a list.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("string %q", v)
	case map[string]any:
		return "a section"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T %v", v, v)
}

func toInt(v any) (int, error) {
	switch v := v.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case int32:
		return int(v), nil
	case uint64:
		if v <= 1<<62 {
			return int(v), nil
		}
	case float64:
		if v == float64(int(v)) && v >= -(1<<53) && v <= 1<<53 {
			return int(v), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("want %v, got %s", Int, describe(v))
}

func toFloat(v any) (float64, error) {
	switch v := v.(type) {
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want %v, got %s", Float, describe(v))
}

func toBool(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("want %v, got %s", Bool, describe(v))
}

func toDuration(v any) (time.Duration, error) {
	switch v := v.(type) {
	case time.Duration:
		return v, nil
	case string:
		if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil {
			return d, nil
		}
	}
	return 0, fmt.Errorf("want %v such as \"500ms\", got %s", Duration, describe(v))
}
