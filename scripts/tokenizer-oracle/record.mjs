// Records transformers.js's token ids for the Llama 3 and Qwen3
// tokenizer.json files on a varied text set, plus the pieces the raw
// pre-tokenizer regexes (GPT-2, Llama 3, Qwen2) cut the texts into, as the
// oracle that model/tokenizer's tests replay (testdata/transformersjs.json).
//
// Usage (CI does not need to run it; the output is committed):
//
//	scripts/fetch-test-tokenizers.sh
//	node scripts/tokenizer-oracle/record.mjs [../shared] > model/tokenizer/testdata/transformersjs.json
//
// The texts are llama.cpp's tokenizer test texts (the .inp files of the
// shared llama.cpp-vocab fixtures) and the extra texts below.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const npm = path.join(root, "model/tokenizer/testdata/npm");
const shared = path.resolve(process.argv[2] ?? path.join(root, "../shared"));
const { TokenizerLoader } = await import(path.join(npm, "tokenizers/dist/main.mjs"));

const texts = [];
const seen = new Set();
const add = (t) => {
  if (!seen.has(t)) {
    seen.add(t);
    texts.push(t);
  }
};
const inp = fs.readFileSync(path.join(shared, "tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf.inp"), "utf8");
for (const t of inp.split("\n__ggml_vocab_test__\n")) {
  if (t !== "") add(t);
}
// Our own: unicode, digits, whitespace runs, contractions, CJK, emoji,
// code and special-token spellings. (Avoid U+0085 and U+FEFF: JavaScript's
// \s disagrees with Unicode White_Space on them.)
for (const t of [
  "I'm sure you'll see they've said he'd won't, we're here.",
  "I'M SURE YOU'LL SEE THEY'VE SAID HE'D, WE'RE",
  "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'x",
  "1 12 123 1234 12345 123456 1234567 3.14159 -42 1e10 0x1F ٣٤٥ ½ ²",
  "  leading and trailing  ",
  "a\n\nb\r\nc\n \n d\t\te   \n\n\n  f",
  " \t \n",
  "     ",
  "\n",
  "Hello\u00a0world\u2003em\u3000ideographic",
  "naïve café résumé Ångström Straße œuvre",
  "Привет, как дела? Ελληνικά κείμενα. עברית مرحبا بالعالم",
  "日本語のテキストと漢字、ひらがな、カタカナ。中文句子，带标点！한국어 문장입니다.",
  "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇯🇵 ❤️ 🦙",
  "func main() {\n\tfmt.Println(\"hi\")\n}\n",
  "def f(x):\n    return x**2  # square\n\nif __name__ == '__main__':\n    print(f(3))",
  "<html><body class=\"x\">&amp; &lt;tag&gt;</body></html>",
  "SELECT * FROM t WHERE a >= 10 AND b != 'x';",
  "https://example.com/path?q=1&r=two#frag user@mail.org",
  "$$$ %%% ^^^ ||| ~~~ +++ === <<< >>> ... !!! ???",
  "<|begin_of_text|>Hello<|eot_id|><|im_start|>user\nhi<|im_end|>",
  "<|endoftext|> <think>reasoning</think> done",
  "a<|eot_id|>b <|start_header_id|>system<|end_header_id|>",
  "ABCdefGHI jklMNO",
  "x".repeat(300),
  "ab".repeat(100) + " " + "9".repeat(50),
  "\u00e9 vs e\u0301 (composed vs decomposed)",
  "tab\tseparated\tvalues\n1\t2\t3",
  "Mixed123Numbers456 and_underscores_here",
  "  \n  \n  ",
  // NFC (Qwen's normalizer): composition, ordering, Hangul, exclusions.
  "Tie\u0302\u0301ng Vie\u0323\u0302t, cafe\u0301, A\u030A vs \u212B, \u2126",
  "\u1100\u1161\u11A8 \u1112\u1161\u11AB\u1100\u1173\u11AF \uAC00\u11A8",
  "a\u0307\u0323 a\u0323\u0307 q\u0307\u0323 \u0958 \u0344 \u0F73 \u2ADC",
  "\uF900 \uFA10 \u1E9B\u0323 \u0B47\u0B3E \u0DD9\u0DCF",
]) {
  add(t);
}

function load(name) {
  const dir = path.join(npm, name, "models");
  return TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  });
}

const out = { texts, nfc: texts.map((t) => t.normalize("NFC")), tokenizers: {}, splits: {} };
for (const name of ["llama3", "qwen3"]) {
  const tok = load(name);
  out.tokenizers[name] = {
    ids: texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false }))),
    ids_special: texts.map((t) => Array.from(tok.encode(t))),
  };
}

// The raw patterns, run by V8's regex engine (lookahead included). The
// (?i:...) group is spelled out per letter, as llama.cpp does, because
// JavaScript has no inline flags.
const ci = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const patterns = {
  "gpt-2": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  "llama-bpe": ci + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen2: ci + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};
// Isolated split: the matches and the gaps between them.
const isolated = (re, t) => {
  const pieces = [];
  let last = 0;
  for (const m of t.matchAll(re)) {
    if (m.index > last) pieces.push(t.slice(last, m.index));
    if (m[0] !== "") pieces.push(m[0]);
    last = m.index + m[0].length;
  }
  if (last < t.length) pieces.push(t.slice(last));
  return pieces;
};
for (const [name, src] of Object.entries(patterns)) {
  const re = new RegExp(src, "gu");
  out.splits[name] = texts.map((t) => isolated(re, t));
}
// llama.cpp's pre-tokenizers that are lists of patterns, each applied to
// every piece the one before produced (unicode_regex_split).
const sequences = {
  starcoder: ["\\p{N}", patterns["gpt-2"]],
  default: ["[\\p{P}\\$\\+<=>\\^~\\|]+", patterns["gpt-2"], "\\p{N}+", "[0-9][0-9][0-9]"],
};
for (const [name, list] of Object.entries(sequences)) {
  out.splits[name] = texts.map((t) => {
    let pieces = t === "" ? [] : [t];
    for (const src of list) {
      const re = new RegExp(src, "gu");
      pieces = pieces.flatMap((p) => isolated(re, p));
    }
    return pieces;
  });
}
process.stdout.write(JSON.stringify(out, null, 0) + "\n");
