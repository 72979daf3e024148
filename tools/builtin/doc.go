// Package builtin provides the small tools every deployment has: get_time,
// roll_dice and random_choice. They need no network and no state; randomness
// comes from crypto/rand so results cannot be predicted from earlier ones.
package builtin
