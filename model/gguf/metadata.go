package gguf

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets the data alignment.
const KeyAlignment = "general.alignment"

// parseMetadata reads the nkv key/value pairs into f.Metadata and its
// index. nkv was checked against the bytes left (parseHeader).
func (f *File) parseMetadata(c *cursor, nkv int) error {
	f.Metadata = make([]KV, 0, nkv)
	f.index = make(map[string]int, nkv)
	for i := 0; i < nkv; i++ {
		key, err := c.key(i)
		if err != nil {
			return err
		}
		if _, dup := f.index[key]; dup {
			return fmt.Errorf("metadata key %q appears twice", key)
		}
		v, err := c.typedValue(key)
		if err != nil {
			return err
		}
		f.index[key] = len(f.Metadata)
		f.Metadata = append(f.Metadata, KV{Key: key, Value: v})
	}
	return nil
}

// key reads the name of metadata entry i.
func (c *cursor) key(i int) (string, error) {
	key, err := c.str(fmt.Sprintf("metadata key %d", i))
	if err != nil {
		return "", err
	}
	if err := checkName(key); err != nil {
		return "", fmt.Errorf("metadata key %d: %w", i, err)
	}
	return key, nil
}

// typedValue reads a value type tag and the value it announces, for the
// entry named key.
func (c *cursor) typedValue(key string) (Value, error) {
	t, err := c.u32()
	if err != nil {
		return Value{}, fmt.Errorf("metadata key %q: %w", key, err)
	}
	v, err := c.value(ValueType(t), 0)
	if err != nil {
		return Value{}, fmt.Errorf("metadata key %q: %w", key, err)
	}
	return v, nil
}

// parseAlignment sets f.Alignment from general.alignment: a uint32 power
// of two up to 1 MiB, DefaultAlignment when the key is absent.
func (f *File) parseAlignment() error {
	f.Alignment = DefaultAlignment
	v, ok := f.Lookup(KeyAlignment)
	if !ok {
		return nil
	}
	a, isU := v.v.(uint64)
	if !isU || v.Type != TypeUint32 {
		return fmt.Errorf("%s is %s, not uint32", KeyAlignment, v.typeName())
	}
	if a == 0 || a&(a-1) != 0 || a > 1<<20 {
		return fmt.Errorf("%s = %d is not a power of two up to 1 MiB", KeyAlignment, a)
	}
	f.Alignment = int(a)
	return nil
}

// checkName rejects the empty string and invalid UTF-8 in keys and
// tensor names (the spec requires UTF-8; an error beats mojibake).
func checkName(s string) error {
	if s == "" {
		return errors.New("empty name")
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("name %q is not valid UTF-8", s)
	}
	return nil
}
