// Records transformers.js's token ids of every rendered conversation in
// model/chat/testdata/chat/{llama3,qwen3}.json, tokenized as Hugging Face's
// apply_chat_template(tokenize=True) does (special tokens parsed, none
// added), as the oracle of model/chat's Encode on conversations whose
// messages spell no control token.
//
// Usage (the output is committed):
//
//	scripts/fetch-test-tokenizers.sh
//	node scripts/chat-template-oracle/encode.mjs > model/chat/testdata/chat/ids.json
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const npm = path.join(root, "model/tokenizer/testdata/npm");
const { TokenizerLoader } = await import(path.join(npm, "tokenizers/dist/main.mjs"));

const out = {};
for (const name of ["llama3", "qwen3"]) {
  const dir = path.join(npm, name, "models");
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  });
  const oracle = JSON.parse(fs.readFileSync(path.join(root, "model/chat/testdata/chat", name + ".json"), "utf8"));
  out[name] = oracle.cases.map((c) => Array.from(tok.encode(c.text, { add_special_tokens: false })));
}
process.stdout.write(JSON.stringify(out) + "\n");
