package purgatory_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// excerpt is a Go block of the README or docs/ marked as an excerpt of a
// file of the repository.
var excerpt = regexp.MustCompile("(?s)<!-- ci:excerpt ([^ ]+) -->\n```go\n(.*?)```")

// Every Go block marked `<!-- ci:excerpt FILE -->` stands in FILE, line for
// line, whatever its indentation there: the README's fragments are the
// example's code, not a copy that drifts from it. (Blocks marked
// ci:program are whole programs, which .ci/run builds.)
func TestDocExcerptsAreInTheirFiles(t *testing.T) {
	docs, _ := filepath.Glob("docs/*.md")
	found := 0
	for _, doc := range append(docs, "README.md") {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range excerpt.FindAllStringSubmatch(string(text), -1) {
			found++
			src, err := os.ReadFile(m[1])
			if err != nil {
				t.Errorf("%s: the excerpt's file: %v", doc, err)
				continue
			}
			if !strings.Contains(dedent(string(src)), dedent(m[2])) {
				t.Errorf("%s: the excerpt of %s is not in it, line for line:\n%s", doc, m[1], m[2])
			}
		}
	}
	if found == 0 {
		t.Fatal("no ci:excerpt block found; the README's long poll is one")
	}
}

// dedent trims each line's leading tabs and spaces.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, " \t")
	}
	return strings.Join(lines, "\n")
}
