package promptparts

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed defaults
var builtin embed.FS

// BuiltinDefaults is the file system of the built-in texts shipped in this
// binary: one Markdown file per key under its root.
func BuiltinDefaults() fs.FS {
	sub, err := fs.Sub(builtin, "defaults")
	if err != nil {
		panic(fmt.Sprintf("opening embedded defaults: %v", err))
	}
	return sub
}
