package purgatory_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
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

// operation.go, which tells an operation's life, stays short enough to read
// at one sitting (issue 49: at most 450 lines); its arguments live at the code
// they protect, its history in the commits.
func TestOperationFileIsShort(t *testing.T) {
	const most = 450
	b, err := os.ReadFile(filepath.Join("purgatory", "operation.go"))
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	require.LessOrEqual(t, lines, most, "purgatory/operation.go has %d lines: move what is not an operation's life to the file of its mechanism", lines)
}
