package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every function in examples/redis, tests and the load test included, is
// at most 60 lines; a table is the exception (commandTable). Every command
// handler in the table is named …Cmd (commandTable's own test, below).
func TestFunctionsAreShort(t *testing.T) {
	const most = 60
	tables := map[string]bool{"commandTable": true}
	fset := token.NewFileSet()
	var long []string
	for _, dir := range []string{".", "loadtest", "redisverdict", "history"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, name := range files {
			f, err := parser.ParseFile(fset, name, nil, 0)
			require.NoError(t, err)
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || tables[fd.Name.Name] {
					continue
				}
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > most {
					long = append(long, fset.Position(fd.Pos()).String()+" "+fd.Name.Name)
				}
			}
		}
	}
	require.Empty(t, long, "functions over %d lines: split them", most)
}

// Every command handler is named …Cmd, so that a command's code is found by
// its name.
func TestHandlersAreNamedCmd(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "commands.go", nil, 0)
	require.NoError(t, err)
	var table *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "commandTable" {
			table = fd
		}
	}
	require.NotNil(t, table)
	handlers := 0
	ast.Inspect(table, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok || kv.Key.(*ast.Ident).Name != "run" {
			return true
		}
		handlers++
		fn := kv.Value
		if call, ok := fn.(*ast.CallExpr); ok { // a factory: pushCmd(true, false)
			fn = call.Fun
		}
		id, ok := fn.(*ast.Ident)
		require.True(t, ok, "%s: a handler is a named function, not %T", fset.Position(kv.Pos()), fn)
		require.Regexp(t, `^[a-z]+Cmd$`, id.Name, fset.Position(kv.Pos()).String())
		return true
	})
	require.Equal(t, len(commandTable()), handlers)
}
