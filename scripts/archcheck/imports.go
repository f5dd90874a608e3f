package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// pkgImports is one package of the module and its non-test imports, as
// `go list` reports them.
type pkgImports struct {
	path  string   // inside the module
	local []string // imports of module packages, paths inside the module
	other []string // every other import
}

// listPackages runs `go list` in the module root dir and returns every
// package with its imports, paths inside the module made relative to it.
func listPackages(dir string) (module string, pkgs []pkgImports, err error) {
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}}\t{{.ImportPath}}\t{{join .Imports \" \"}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			return "", nil, fmt.Errorf("go list: unexpected line %q", sc.Text())
		}
		module = f[0]
		p := pkgImports{path: strings.TrimPrefix(strings.TrimPrefix(f[1], module), "/")}
		for _, imp := range strings.Fields(f[2]) {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				p.local = append(p.local, rel)
			} else {
				p.other = append(p.other, imp)
			}
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs, sc.Err()
}

// ruleFor is the rule covering package path, or nil.
func ruleFor(rs []rule, path string) *rule {
	for i := range rs {
		if rs[i].pkg == path {
			return &rs[i]
		}
	}
	for i := range rs {
		if base, ok := strings.CutSuffix(rs[i].pkg, "/..."); ok && strings.HasPrefix(path, base+"/") {
			return &rs[i]
		}
	}
	return nil
}

// isStd reports whether an import path is the standard library's: its
// first element has no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// checkImports returns one line per violation of rs by pkgs: a package
// with no rule, or an import its rule does not allow. Planned
// packages that do not exist yet are no violation; rules for packages
// that are neither planned nor present are (the table went stale).
func checkImports(rs []rule, pkgs []pkgImports) []string {
	var bad []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		r := ruleFor(rs, p.path)
		if r == nil {
			bad = append(bad, fmt.Sprintf("%s: no import rule; add it to scripts/archcheck/rules.go and docs/architecture.md", p.path))
			continue
		}
		seen[r.pkg] = true
		for _, imp := range p.local {
			if !slices.Contains(r.imports, "*") && !slices.Contains(r.imports, imp) {
				bad = append(bad, fmt.Sprintf("%s imports %s; it may import only %s", p.path, imp, listOrNone(r.imports)))
			}
			if slices.Contains(r.below, imp) && r.because[imp] == "" {
				bad = append(bad, fmt.Sprintf("%s imports %s, below the library it should go through; use the library, or name why in its rule's because", p.path, imp))
			}
		}
		for _, imp := range p.other {
			if !isStd(imp) && !slices.ContainsFunc(r.external, func(pre string) bool { return strings.HasPrefix(imp, pre) }) {
				bad = append(bad, fmt.Sprintf("%s imports %s; outside the standard library it may import only %s", p.path, imp, listOrNone(r.external)))
			}
		}
	}
	for _, r := range rs {
		if !r.planned && !seen[r.pkg] {
			bad = append(bad, fmt.Sprintf("%s: has a rule but no package; mark it planned or remove it", r.pkg))
		}
	}
	return bad
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}
