package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestKcat: lines produced with librdkafka's kcat (acks=all) are read back
// with kcat -C -e, byte for byte. CI installs kcat and sets KCAT_REQUIRED, so
// that there the test cannot skip.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("KCAT_REQUIRED") != "" {
			t.Fatal("kcat is not installed (apt-get install kcat)")
		}
		t.Skip("kcat is not installed (apt-get install kcat)")
	}
	_, addr, _ := startBroker(t, Config{Replicas: 3, AutoCreate: true})
	var in bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&in, "line %d: \x01 bytes \xff as they are, %s\n", i, bytes.Repeat([]byte{'x'}, i%50))
	}
	produce := exec.Command(kcat, "-b", addr, "-P", "-t", "lines", "-p", "0", "-X", "acks=all")
	produce.Stdin = bytes.NewReader(in.Bytes())
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	consume := exec.Command(kcat, "-b", addr, "-C", "-t", "lines", "-p", "0", "-o", "beginning", "-e", "-q")
	var stderr bytes.Buffer
	consume.Stderr = &stderr
	out, err := consume.Output()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, stderr.Bytes())
	}
	if !bytes.Equal(out, in.Bytes()) {
		t.Errorf("kcat read back %d bytes, produced %d; first difference at byte %d", len(out), in.Len(), firstDiff(out, in.Bytes()))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
