package env

// Field is a named value of a game's own record form (RecordFielder).
type Field struct {
	Name  string
	Value any
}

// RecordFielder is implemented by a game's own record form (Record.Extra,
// the card game's deals): the fields it adds, in order, to the fields
// every record shows (game, actions, returns, seed). A value is a number,
// a bool, a string, a slice of those (nil shows as null), an object
// ([]Field, whose fields keep their order) or a slice of objects
// ([][]Field). A front end shows them as they are, knowing no game.
type RecordFielder interface {
	RecordFields() []Field
}
