package slinky

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// HashBytes is the content hash stored in the hash annotations. Only a
// prefix is kept: it detects changes, it does not protect the key.
func HashBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// HashStrings hashes a string map independently of iteration order. Keys and
// values are length-prefixed so that {"a":"bc"} and {"ab":"c"} differ.
func HashStrings(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		writeField(h, k)
		writeField(h, data[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func writeField(h interface{ Write([]byte) (int, error) }, s string) {
	var n [8]byte
	l := uint64(len(s))
	for i := range n {
		n[i] = byte(l >> (8 * i))
	}
	_, _ = h.Write(n[:])
	_, _ = h.Write([]byte(s))
}
