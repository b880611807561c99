package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPositionTagged: the position keeps the co-writes tag saved with it;
// a file with the position alone, as older versions wrote it, has none.
func TestPositionTagged(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := d.Position()
	if pos, tag, err := p.LoadTagged(); pos != "" || tag != 0 || err != nil {
		t.Errorf("no file: %q, %d, %v", pos, tag, err)
	}
	if err := p.SaveTagged("0-1-5,1-2-7", 42); err != nil {
		t.Fatal(err)
	}
	if pos, tag, err := p.LoadTagged(); pos != "0-1-5,1-2-7" || tag != 42 || err != nil {
		t.Errorf("saved with a tag: %q, %d, %v", pos, tag, err)
	}
	if pos, err := p.Load(); pos != "0-1-5,1-2-7" || err != nil {
		t.Errorf("Load: %q, %v", pos, err)
	}
	if err := os.WriteFile(filepath.Join(d.Path(), "binlog-position"), []byte("0-1-9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pos, tag, err := p.LoadTagged(); pos != "0-1-9" || tag != 0 || err != nil {
		t.Errorf("the position alone: %q, %d, %v", pos, tag, err)
	}
	if err := d.SaveCoWrites([]byte(`{"tag":42}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := d.CoWrites(); string(b) != `{"tag":42}` || err != nil {
		t.Errorf("CoWrites: %q, %v", b, err)
	}
}
