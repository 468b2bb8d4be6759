package promptparts

import (
	"hash/maphash"
	"slices"
	"sync"
)

// maxOutputs bounds the prompts kept per revision: one for the main Session
// and one per Executor working at the same time.
const maxOutputs = 64

// outputCache maps an Input to the prompt built for it from one revision.
// A revision never changes, so an entry is valid for the revision's life;
// the cache only saves rebuilding and reallocating the same bytes on every
// model request of a Session.
type outputCache struct {
	seed    maphash.Seed
	mu      sync.Mutex
	entries map[uint64]outputEntry
}

type outputEntry struct {
	in     Input
	prompt string
}

func newOutputCache() outputCache {
	return outputCache{seed: maphash.MakeSeed(), entries: map[uint64]outputEntry{}}
}

func (oc *outputCache) hash(in Input) uint64 {
	var h maphash.Hash
	h.SetSeed(oc.seed)
	field := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	field(string(in.Role))
	for _, v := range in.Environment {
		field(v.Name)
		field(v.Value)
	}
	h.WriteByte(1)
	for _, f := range in.AgentsMD {
		field(f.Path)
		field(f.Text)
	}
	h.WriteByte(2)
	for _, r := range in.InferredRules {
		field(r.ID)
		field(r.Name)
		field(r.Instruction)
	}
	return h.Sum64()
}

func (oc *outputCache) get(in Input) (string, bool) {
	key := oc.hash(in)
	oc.mu.Lock()
	e, ok := oc.entries[key]
	oc.mu.Unlock()
	if !ok || !sameInput(e.in, in) {
		return "", false
	}
	return e.prompt, true
}

func (oc *outputCache) put(in Input, prompt string) {
	key := oc.hash(in)
	// Keep a copy: the caller may reuse its slices.
	in.Environment = slices.Clone(in.Environment)
	in.AgentsMD = slices.Clone(in.AgentsMD)
	in.InferredRules = slices.Clone(in.InferredRules)
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if len(oc.entries) >= maxOutputs {
		clear(oc.entries)
	}
	oc.entries[key] = outputEntry{in: in, prompt: prompt}
}

// sameInput compares field by field, so a hash collision cannot serve the
// wrong prompt. Rules compare on what the prompt shows of them.
func sameInput(a, b Input) bool {
	if a.Role != b.Role || !slices.Equal(a.Environment, b.Environment) || !slices.Equal(a.AgentsMD, b.AgentsMD) ||
		len(a.InferredRules) != len(b.InferredRules) {
		return false
	}
	for i, r := range a.InferredRules {
		o := b.InferredRules[i]
		if r.ID != o.ID || r.Name != o.Name || r.Instruction != o.Instruction {
			return false
		}
	}
	return true
}
