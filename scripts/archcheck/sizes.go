package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The size limits of docs/architecture.md: a file over maxFileLines
// should be one cohesive table, a function over maxFuncLines should be
// split. The report does not fail: it is a to-do list.
const (
	maxFileLines = 600
	maxFuncLines = 80
)

// generated matches the line Go's tools recognise as marking a generated
// file.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// oversized is one entry of the size report.
type oversized struct {
	file      string
	name      string // function name, or "" for the file itself
	lines     int
	generator bool // the file is a build-ignored generator program
}

// sizeReport walks the Go files under root, skipping tests, generated
// files and the testdata, vendor and hidden directories, and returns the
// files over maxFileLines and the functions over maxFuncLines. Functions
// of build-ignored generator programs (//go:build ignore, such as asmgen.go)
// are not counted: they are allowed to be long.
func sizeReport(root string) ([]oversized, error) {
	var out []oversized
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(src) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		gen := isGenerator(f)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			out = append(out, oversized{file: rel, lines: n, generator: gen})
		}
		if gen {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				out = append(out, oversized{file: rel, name: funcName(fn), lines: n})
			}
		}
		return nil
	})
	return out, err
}

// isGenerator reports whether f is a build-ignored program (//go:build
// ignore), which is how the module's code generators are kept out of
// the packages they write.
func isGenerator(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if c.Text == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}

// funcName is "Recv.Name" for methods and "Name" for functions.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}

// printSizes writes the report, largest first within files and functions.
func printSizes(w io.Writer, rs []oversized) {
	files, funcs := 0, 0
	slices.SortStableFunc(rs, func(a, b oversized) int { return b.lines - a.lines })
	for _, r := range rs {
		if r.name == "" {
			note := ""
			if r.generator {
				note = "; a generator, which may be longer if its functions are small"
			}
			fmt.Fprintf(w, "file %5d lines  %s (limit %d%s)\n", r.lines, r.file, maxFileLines, note)
			files++
		}
	}
	for _, r := range rs {
		if r.name != "" {
			fmt.Fprintf(w, "func %5d lines  %s %s (limit %d)\n", r.lines, r.file, r.name, maxFuncLines)
			funcs++
		}
	}
	fmt.Fprintf(w, "%d files over %d lines, %d functions over %d lines (report only)\n", files, maxFileLines, funcs, maxFuncLines)
}
