package attention

import "github.com/stride-lm/stride/tensor"

// prologue is how every Path's Attend begins: check the tensors' shapes
// (checkInputs), check that the batch's rows, block tables and slots fit
// the cache (Batch.Validate), and write the step's k and v into the
// cache at b.SlotMapping, recording the reshape_and_cache trace row
// (writeCache). Both paths then read keys and values back from the cache
// (the naive path views the fresh ones only where they are the cache's
// bits), so each attends over exactly what the cache holds.
func prologue(q, k, v, kCache, vCache *tensor.Tensor, b *Batch, tr *tensor.Trace) (dims, error) {
	d, err := checkInputs(q, k, v, kCache, vCache)
	if err != nil {
		return d, err
	}
	if err := b.Validate(d.T, d.numBlocks, d.blockSize); err != nil {
		return d, err
	}
	if _, err := writeCache(k, v, kCache, vCache, b, d, tr); err != nil {
		return d, err
	}
	return d, nil
}
