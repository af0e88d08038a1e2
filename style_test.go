package purgatory_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// No function of the library is over 40 lines (issue 49): a function that
// long is two things, and a state machine's are read step by step. Tests and
// examples are not held to it.
func TestLibraryFunctionsAreShort(t *testing.T) {
	const most = 40
	dirs := []string{"purgatory", "timingwheel", "bucket", "delayqueue", "metrics"}
	internal, err := filepath.Glob("internal/*")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var long []string
	for _, dir := range append(dirs, internal...) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			require.NoError(t, err)
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > most {
					long = append(long, fset.Position(fd.Pos()).String()+" "+fd.Name.Name)
				}
			}
		}
	}
	require.Empty(t, long, "library functions over %d lines: split them", most)
}
