package model

// The ids llama2.c's run.c fixes for its tokenizers (and the byte codec of
// a model without one). Tokenization itself lives in package
// model/tokenizer, which this package does not import: a model sees only
// ids.
const (
	UnkID = 0 // <unk>
	BOSID = 1 // beginning of sequence
	EOSID = 2 // end of sequence
)
