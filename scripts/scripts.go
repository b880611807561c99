// Package scripts holds the Lua policy scripts that ship with mycached,
// embedded in the binary. default.lua is the policy the engine loads when
// no script is named; the others are examples to copy and adapt.
package scripts

import "embed"

// FS holds every shipped script, by file name ("default.lua", ...).
//
//go:embed *.lua
var FS embed.FS

// DefaultName is the file name of the built-in policy in FS.
const DefaultName = "default.lua"
