package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/stride-lm/stride/configs"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/chat"
	"github.com/stride-lm/stride/model/engine"
)

func init() {
	registerKeys(
		configs.Key{Name: "chat.system", Kind: configs.String, Default: "", Help: "system prompt of infer chat"},
		configs.Key{Name: "chat.template", Kind: configs.String, Default: "", Help: "chat template: a built-in name (llama-2, llama-3, chatml, zephyr) or a file (Jinja, or a tokenizer_config.json); empty = the model's, else run.c's llama-2 format"},
		configs.Key{Name: "chat.raw", Kind: configs.Bool, Default: false, Help: "no template: each line continues the text (base models)"},
	)
	register(newChatCmd)
}

func newChatCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with a model: one user turn per line, the reply streamed",
		Long: `chat reads a user turn (one line), renders the conversation with the chat
template, streams the model's reply and reads the next turn. The
conversation's KV cache stays in the paged cache between turns: each turn
resubmits the conversation's tokens, and the engine's prefix sharing reuses
the blocks already computed (cached_tokens in the statistics line).

Template: --chat-template NAME|FILE, else the model's own (GGUF's
tokenizer.chat_template, HF's tokenizer_config.json), else run.c's -m chat
format for Llama-2 ("[INST] ... [/INST]", each turn starting with BOS).
--raw uses no template: each line continues the text, for base models.

With stdin piped, each line is one user turn, replies go to stdout and
statistics to stderr; EOF ends the session with status 0. On a terminal,
Ctrl-C stops the current reply (not the session) and Ctrl-D exits.

--steps caps the whole conversation, as in run.c; -n caps each reply.`,
		Example: `  printf 'Hello\nTell me a story\n' | infer chat --config configs/stories260k.yaml
  infer chat -m stories15M.bin --tokenizer tokenizer.bin --system "You are terse." -n 128`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runChat(a, cmd) },
	}
	modelFlags(a, cmd)
	a.flag(cmd, "steps", "steps", "positions of the whole conversation, as run.c; 0 = the context")
	runcSamplerFlags(a, cmd)
	samplingFlags(a, cmd)
	a.flag(cmd, "system", "chat.system", "system prompt")
	a.flag(cmd, "chat-template", "chat.template", "chat template name or file")
	a.flag(cmd, "raw", "chat.raw", "no template: plain continuation")
	return cmd
}

// chatSession is one conversation (chat.Conversation: the messages and
// the ids the model has seen) and the one engine whose cache keeps them.
type chatSession struct {
	lm        *loadedModel
	e         *engine.Engine
	tmpl      *chat.Template // nil with --raw
	conv      *chat.Conversation
	stops     []string
	rule      stepsRule
	limit     int // the conversation's positions: min(steps, ctx)
	sampler   *model.Sampler
	newTokens int // how many ids the last user turn added
	out, log  io.Writer
	turns     int
}

func runChat(a *app, cmd *cobra.Command) error {
	lm, err := loadModel(a)
	if err != nil {
		return err
	}
	defer lm.m.Close()
	stderr := cmd.ErrOrStderr()
	if h := tokenizerHint(a, lm); h != "" {
		fmt.Fprintln(stderr, h)
	}
	s := &chatSession{lm: lm, stops: a.cfg.Strings("stop"), out: cmd.OutOrStdout(), log: stderr}
	if !a.cfg.Bool("chat.raw") {
		if s.tmpl, err = chat.Select(a.cfg.String("chat.template"), lm.gen.ChatTemplate, lm.gen.EOSText); err != nil {
			return err
		}
	}
	s.conv = chat.NewConversation(s.tmpl, lm.codec, lm.addBOS(), a.cfg.String("chat.system"))
	c := lm.m.Config
	ctxLen := contextSize(a, c, stderr)
	if s.rule, err = newStepsRule(a, ctxLen, stderr); err != nil {
		return err
	}
	s.limit = min(s.rule.steps, ctxLen)
	if s.rule.nPredict != 0 || a.cfg.Source("steps") == "default" {
		s.limit = ctxLen // -n caps each reply; the context caps the conversation
	}
	opts, err := engineOptions(a, nil)
	if err != nil {
		return err
	}
	opts.Context = ctxLen
	opts.Tokenizer = lm.codec
	if s.e, err = engine.New(lm.m, opts); err != nil {
		return err
	}
	defer s.e.Close()
	s.sampler = newSampler(a, lm, samplerSeed(a), nil)
	return s.loop(cmd.Context(), cmd.InOrStdin())
}

// errContextFull ends a session whose conversation filled the context.
var errContextFull = errors.New("the conversation filled the context; start a new one or raise --ctx-size")

// loop reads user turns until EOF (Ctrl-D) and answers each.
func (s *chatSession) loop(ctx context.Context, in io.Reader) error {
	term := stdinTerminal(in)
	lines := make(chan string)
	readErr := make(chan error, 1)
	go func() { // a blocked read must not keep an interrupt from ending the session
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxInputBytes)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	for {
		if term {
			fmt.Fprint(s.out, "> ")
		}
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case line, ok = <-lines:
		}
		if !ok {
			if term {
				fmt.Fprintln(s.out)
			}
			select {
			case err := <-readErr:
				if err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
			default:
			}
			return writeErr(s.out)
		}
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := s.turn(ctx, line, term); err != nil {
			return err
		}
	}
}

// turn answers one user line: it extends the conversation's ids, runs
// the engine over all of them (the cached prefix is shared, not
// recomputed), streams the reply and prints the turn's statistics.
func (s *chatSession) turn(parent context.Context, line string, term bool) error {
	s.turns++
	var err error
	if s.newTokens, err = s.conv.AddUser(parent, line); err != nil {
		return err
	}
	if len(s.conv.IDs()) >= s.limit {
		return errContextFull
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	guard := &replyGuard{generating: true, cancel: cancel}
	if term { // Ctrl-C stops this reply only
		stop := guard.interrupt
		replyInterrupt.Store(&stop)
		defer replyInterrupt.Store(nil)
	}
	ids := s.conv.IDs()
	rep := &chatReply{promptLen: len(ids)}
	req := s.request()
	hooks := engine.Hooks{Token: rep.stream(s.out, cancel)}
	s.sampler.Accept(ids[len(ids)-s.newTokens:]...)
	res, _, err := s.e.Run(ctx, []engine.Request{req}, hooks)
	guard.done()
	if werr := writeErr(s.out); werr != nil {
		return werr
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	return s.finishTurn(res[0], rep)
}

// replyGuard lets Ctrl-C stop the reply being generated instead of the
// session: while generating, an interrupt cancels the reply's context
// and is consumed; after, it is the session's again.
type replyGuard struct {
	mu         sync.Mutex
	generating bool
	cancel     context.CancelFunc
}

// interrupt is replyInterrupt's hook: it reports whether it stopped a
// reply.
func (g *replyGuard) interrupt() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.generating {
		g.cancel()
	}
	return g.generating
}

// done ends the stretch in which an interrupt stops the reply.
func (g *replyGuard) done() {
	g.mu.Lock()
	g.generating = false
	g.mu.Unlock()
}

// request is the turn's engine request: the whole conversation, run to
// the conversation's limit (or -n more tokens), ending early at the
// model's stop ids or at a stop string or template marker, matched by
// the engine. (run.c's llama-2 chat ends a turn at EOS, whose piece
// holds its "</s>" marker: the turn stops there and EOS is fed, as in
// run.c.)
func (s *chatSession) request() engine.Request {
	ids := s.conv.IDs()
	steps := s.limit
	if s.rule.nPredict > 0 {
		steps = min(s.limit, len(ids)-1+s.rule.nPredict)
	}
	return engine.Request{Prompt: ids, Steps: steps, Sampler: s.sampler, StopTokens: s.lm.gen.StopTokens,
		Stop: append(append([]string(nil), s.stops...), s.templateStops()...)}
}

// chatReply is one reply as it streams: the engine's text deltas, which
// never hold the start of a stop marker.
type chatReply struct {
	promptLen int       // the conversation's ids before the reply
	first     time.Time // when the first reply token came
	gen       int       // reply tokens so far
}

// stream is the engine's token hook: it skips the prompt's tokens and
// writes each reply delta to out, cancelling the reply when out fails.
func (r *chatReply) stream(out io.Writer, cancel context.CancelFunc) func(engine.Event) {
	return func(ev engine.Event) {
		if ev.Prompt {
			return
		}
		if r.gen == 0 {
			r.first = time.Now()
		}
		r.gen++
		if _, err := io.WriteString(out, ev.Text); err != nil {
			cancel()
		}
	}
}

// tokensPerSecond is the decode rate after the first reply token (whose
// wait is the prefill's); 0 with fewer than two tokens.
func (r *chatReply) tokensPerSecond() float64 {
	if d := time.Since(r.first).Seconds(); r.gen > 1 && d > 0 {
		return float64(r.gen-1) / d
	}
	return 0
}

// finishTurn writes the rest of the reply and the turn's statistics, and
// adds the reply to the conversation.
func (s *chatSession) finishTurn(r engine.Result, rep *chatReply) error {
	s.out.Write([]byte(r.FlushText))
	fmt.Fprintln(s.out)
	reply := r.Tokens[min(len(r.Tokens), rep.promptLen-1):]
	fmt.Fprintf(s.log, "[turn %d: %d prompt tokens (%d cached), %d generated, %.1f tok/s, %s]\n",
		s.turns, rep.promptLen, r.CachedTokens, len(reply), rep.tokensPerSecond(), r.FinishReason)
	s.conv.AddReply(reply, r.Text)
	if r.FinishReason == engine.FinishLength && len(s.conv.IDs()) >= s.limit {
		return errContextFull
	}
	return nil
}

// templateStops are the markers that end a reply in the template's format.
func (s *chatSession) templateStops() []string {
	if s.tmpl == nil {
		return nil
	}
	return s.tmpl.Stops()
}
