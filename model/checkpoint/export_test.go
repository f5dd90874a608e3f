package checkpoint

import "github.com/stride-lm/stride/model"

// OpenSource opens the checkpoint at path as a model.Source, without its
// tokenizer (openSource without the Kind), for the tests that read a
// checkpoint's tensors.
func OpenSource(path string, opts model.LoadOptions) (model.Source, error) {
	src, _, err := openSource(path, opts)
	return src, err
}
