package clientmatrix

// knownDiff is a difference between what a client sees directly and
// through mycached that exists today. The matrix fails on a difference
// that is not listed, and on a listed one that no longer occurs, so this
// table is the list of what is still to fix.
type knownDiff struct {
	Case   string // a case id of testdata/cases.json
	Client string // a client name (see clients), or "*" for every client
	Via    string // "cached", "passthrough", or "*" for both
	Reason string // "bug: " and the cause, naming mycached's code
}

// knownDiffs holds every difference found today: none. A new one is
// listed here with its cause until it is fixed, and in README.md's
// "Differences from a direct connection".
var knownDiffs = []knownDiff{}
