package gguf

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// everyType is metadata holding each value type, scalar and array,
// including an array of arrays.
func everyType() []KV {
	vals := []any{
		uint8(200), int8(-100), uint16(60000), int16(-30000), uint32(4000000000), int32(-2000000000),
		float32(1.5), true, "héllo", uint64(1 << 63), int64(-1 << 62), float64(math.Pi),
		[]uint8{1, 2, 255}, []int8{-1, 0, 127}, []uint16{0, 65535}, []int16{-32768, 1}, []uint32{7, 8, 9},
		[]int32{-5, 5}, []uint64{1, 1 << 63}, []int64{-9, 9}, []float32{float32(math.Inf(-1)), 0.25},
		[]float64{-0.5, 1e300}, []bool{true, false, true}, []string{"", "▁a", "Ġb"}, []string{},
		[]Value{MustValue([]int32{1, 2}), MustValue([]int32{3})},
	}
	kvs := []KV{{Key: KeyAlignment, Value: MustValue(uint32(64))}}
	for i, v := range vals {
		kvs = append(kvs, KV{Key: "test.k" + string(rune('a'+i)), Value: MustValue(v)})
	}
	return kvs
}

func TestWriteReadEveryValueType(t *testing.T) {
	kvs := everyType()
	tensors := []WriterTensor{
		{Name: "a", Type: kernels.TypeF32, Shape: []int{2, 3}, Data: make([]byte, 24)},
		{Name: "b", Type: kernels.TypeQ8_0, Shape: []int{1, 64}, Data: bytes.Repeat([]byte{7}, 68)},
		{Name: "c", Type: kernels.TypeF16, Shape: []int{5}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "mem")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Metadata, kvs) {
		for i := range kvs {
			if !reflect.DeepEqual(f.Metadata[i], kvs[i]) {
				t.Errorf("key %s: read %#v, wrote %#v", kvs[i].Key, f.Metadata[i].Value, kvs[i].Value)
			}
		}
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	for _, w := range tensors {
		ti, ok := f.Tensor(w.Name)
		if !ok || ti.Type != w.Type || !reflect.DeepEqual(ti.Shape, w.Shape) || ti.Offset%64 != 0 {
			t.Errorf("tensor %s: %+v", w.Name, ti)
			continue
		}
		d, err := f.Data(ti)
		if err != nil || !bytes.Equal(d, w.Data) {
			t.Errorf("tensor %s data %v, %v", w.Name, d, err)
		}
	}
	// Accessors across integer widths.
	if v, err := f.Uint("test.ke"); err != nil || v != 4000000000 {
		t.Errorf("Uint(uint32) = %d, %v", v, err)
	}
	if v, err := f.Int("test.kb"); err != nil || v != -100 {
		t.Errorf("Int(int8) = %d, %v", v, err)
	}
	if _, err := f.Uint("test.kb"); err == nil {
		t.Error("Uint of a negative int8 succeeded")
	}
	if _, err := f.Int("test.kj"); err == nil {
		t.Error("Int of 1<<63 succeeded")
	}
	if v, err := f.Float("test.kg"); err != nil || v != 1.5 {
		t.Errorf("Float(float32) = %g, %v", v, err)
	}
	if v, err := f.Bool("test.kh"); err != nil || !v {
		t.Errorf("Bool = %v, %v", v, err)
	}
	if v, err := f.Ints("test.km"); err != nil || !reflect.DeepEqual(v, []int64{1, 2, 255}) {
		t.Errorf("Ints([]uint8) = %v, %v", v, err)
	}
}

// Each one-type accessor refuses a value of another type, and an absent
// key, with an error naming the key and both types.
func TestAccessorTypeErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, everyType(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes(), "mem")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		get  func(key string) error
		key  string // a key of another type
		want string
	}{
		{"String", func(k string) error { _, err := f.String(k); return err }, "test.ka", `"test.ka" is uint8, not string`},
		{"Float", func(k string) error { _, err := f.Float(k); return err }, "test.kh", `"test.kh" is bool, not a float`},
		{"Bool", func(k string) error { _, err := f.Bool(k); return err }, "test.ki", `"test.ki" is string, not bool`},
		{"Strings", func(k string) error { _, err := f.Strings(k); return err }, "test.km", `"test.km" is array[uint8], not array[string]`},
		{"Float32s", func(k string) error { _, err := f.Float32s(k); return err }, "test.kv", `"test.kv" is array[float64], not array[float32]`},
		{"Int32s", func(k string) error { _, err := f.Int32s(k); return err }, "test.kq", `"test.kq" is array[uint32], not array[int32]`},
		{"Ints", func(k string) error { _, err := f.Ints(k); return err }, "test.kw", `"test.kw" is array[bool], not an array of integers`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.get(c.key); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s(%s) error %v, want one containing %s", c.name, c.key, err, c.want)
			}
			if err := c.get("no.such.key"); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s(absent) error %v, want ErrNotFound", c.name, err)
			}
		})
	}
	if _, err := f.Ints("test.ks"); err == nil || !strings.Contains(err.Error(), "element 1 is 9223372036854775808, beyond int64") {
		t.Errorf("Ints([]uint64{1, 1<<63}) error %v", err)
	}
}
