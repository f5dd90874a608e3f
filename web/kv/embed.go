// Package kv holds the files of the KV cache page that `infer serve
// --debug-endpoints` serves at /kv (docs/serving.md): index.html, kv.js
// and kv.css, embedded so the binary serves them from any directory,
// without a checkout or network access.
package kv

import "embed"

// Files are the page's files, at the top of the file system.
//
//go:embed index.html kv.js kv.css
var Files embed.FS
