"""The detector's thresholds, each with the reason for its value.

In: nothing. Out: class attributes ``TableDetector`` inherits. An instance may set its own
(``det.doubt_base_p = 2`` turns a stage off for a test; ``evalsets.rules_only``), which
then travels with it to the look worker. Most were measured on the tuning split of the
held-out protocol (``benchmarks/heldout.py --split tuning``), some on our own renders; the
figures in the comments are those measured when each was chosen.
"""

from __future__ import annotations

import numpy as np


class Tunables:
    """Every threshold a look's stages share (a base of ``TableDetector``)."""

    # Ring correlation: generous, candidates are fitted next. A green rim on a green
    # mat, its miniature hiding all but a thin arc of it, rings at 0.054: at 0.06
    # it was never found (93.4 % recall on that clip); the eval sets are the same.
    score_threshold = 0.05
    tokens_every = 1  # look for tokens in every n-th full detection (the tracker holds them between)
    max_state_tokens = 24  # state-token discs looked at per look (recognition on)
    # A token disc whose tag is not read (yet): a printed tag's black square border
    # against the paper round it scores 75-140 in TagReader's search, a miniature on a
    # 25 mm base (white rims included) 40 or less; see _settle_discs.
    tag_face_min = 60.0
    # ... and it is near some token's code (cells wrong, of 16; a miniature: 15 or
    # more; a plain objective's black ring is as dark as a tag's border, but 19).
    tag_face_cost = 6.0
    learn_rim_colours = False  # on: more rims found where light dulls them, more false ones too
    # Within 8 % of the set-up's light a frame is used as it is: the detector takes
    # that in its stride (our own clips' video frames sit 5-7 % bluer than their
    # table.jpg, a codec's shift; re-lit, the Warcry clip lost 0.003 in of RMS), and a
    # dimming of 10 % does not (recall 98.6 %, floor RMS 0.055 in on the eval sets
    # un-relit; re-lit 99.4 %, 0.026 in).
    relight_within = 0.08
    min_coverage = 0.18  # share of the rim's circle seen as a clean edge
    min_arc_mm = 0.18 * np.pi * 40.0  # ... and for bases over 40 mm, this length of it
    # Partly hidden rims: centres voted for by the rim's edge (_arc_candidates).
    arc_candidates = True
    arc_threshold = 0.02
    # A fitted rim round bare table, or round a solid disc of its colour, is no base
    # (_base_body): middle changed from the empty table, at least; a solid disc: edge
    # points thin, at most, and rim evidence over the middle, over.
    bare_middle_max = 0.15
    solid_thin_max, solid_middle_min = 0.26, 0.5
    # A rim seen in small part with base all round it, no bare table just beyond, is
    # a circle inside a bigger base of its colour (_bare_beyond): below this score,
    # at most this share of bare table 0.08-0.16 in past it; and under the second share it
    # gives way to a larger rim of its side round it (_ranks).
    inside_check_below, inside_bare_max, inside_gives_way_bare = 0.35, 0.2, 0.4
    # A kept base's rim explains another's edge points up to this far outside its edge.
    explained_margin_px = 1.5
    token_edges_explain = True
    # A side fields the round bases its roster (``bases_mm``) lists; a whole look holds
    # what it found against them (_bases_from_candidates). Where a side is short of a
    # size, a rim of it seen this much of its least share (and whose own circle is
    # within this many pixels of the size's) is that base; where a side has one too
    # many of a size, a rim of a size it is short of, seen this much of the surplus
    # one's score, takes that one's place. On the shared sets, as given and with a
    # worse picture (benchmarks/robustness.py), 0.8 / 1 px / 0.9 found more bases and
    # placed some better; with every roster doubled (every side short of every size,
    # as after casualties) they added none (docs/benchmarks.md). 1 / any / >1: no say.
    roster_relax, roster_radius_px, roster_swap_share = 0.8, 1.0, 0.9
    # An outline kept across two candidates of its side and outline, one each way along
    # it, each seen at least this share as well, gives way to them (_unstraddled; 2: off).
    straddle_share = 0.8
    edge_bias_px = 0.8  # the half-evidence edge lies outside the rim (blur)
    inner_rim_share = 0.7  # see _ranks
    inner_rim_margin_in = 0.15  # how far such an inner circle may stick out of the outer (_ranks)
    radius_prior_weight = 16.0  # a size's expected radius counts as this many edge points
    # ... but not for a side set-up warns is close to the mat's colour: its edge lies
    # further out the further from the nadir (0.6 px near it, 2 px 14 in out on our
    # renders; the colour's own blur), so the offset learnt from its whole rims is
    # wrong for most of its crescents. Our renders 0.0301 -> 0.0275 in; the shared
    # sets, whose one warned side keeps its offset better, 0.0248 -> 0.0251.
    warned_prior_weight = 0.0
    # How much of a painted side wall's apparent width reads as rim, per side, learnt
    # from its whole rims (_wall_px, _learn_edge_bias); until three are seen, none.
    wall_share_start = 0.0
    name_looks = 3
    # A token's name kept at this likeness (normalised correlation) or more, and
    # when every other assignment is worse by ``name_margin``: on Epic tuning
    # close-ups (7 tables) a tag's own code scored 0.6-0.97; other codes a bare 0.05
    # or less above it. A disc nothing else claimed becomes a token at
    # ``name_disc_floor`` and ``name_blob_gain`` more like its code than like a
    # plain or hollow dark square (miniatures and shadows reached 0.86 alone) ...
    name_floor, name_margin, name_disc_floor = 0.6, 0.06, 0.6
    name_blob_gain = 0.05
    name_blob_share = 0.5  # (or half what the blob leaves unexplained, if less: _name_discs)
    # ... and a disc that clears both but is nearly as like (``name_margin``) other ids is
    # still a token of the kind all those ids share, its id unread (24 Epic tuning tables:
    # objectives found 93.4 -> 95.3 %, precision 99.8 % both, control calls agreeing
    # 92.7 -> 93.9 %; Warcry and mixed tables unchanged).
    name_kind_alone = True
    # ... and a tag face whose nearest code (a blur of a few cells) is a state token's is
    # named among the game's ids too: as any tag face where the table uses no state
    # tokens, against that code where it does (8 Epic tuning tables: 4 of 5 objectives
    # found as discs but never named were such faces).
    name_state_faces = True
    # ... and only where the decoder saw some tag border darker than the paper
    # beside it (its face score): tags at 720p 15-100, 60 % of the other discs under 10;
    # and whose middle is as neutral as printed card (median chroma; on 29 Epic
    # tuning tables unclaimed tag discs 1.4 at the 10th percentile, 4.1 at the median;
    # the other unclaimed discs, stands' miniatures, 15 at the median).
    name_face_min = 10.0
    name_disc_chroma = 10.0
    # ... or under this share of the empty mat's own chroma round it (_neutral_disc): card
    # on a strongly coloured mat takes a cast of it (Epic tuning tables at 720p: objectives'
    # middles 0.26-0.28 of an orange mat's chroma, stands' miniatures 0.35 and up; 48 Epic
    # tuning tables: tokens found 1,879 -> 1,885 of 1,920, none misnamed; Warcry and
    # mixed tables unchanged).
    name_mat_share = 0.3
    # An unread tag on a disc of one kind's colour is named as another kind's id only if
    # it is this much more like that id than like any of its colour's kind (24 mixed
    # tuning tables: 4 treasures whose gold ring a 720p picture loses found, no id wrong).
    name_other_kind = 0.06
    token_hiding_score = 0.25  # a round base hides a token's place from the search only seen this well (_not_token_places)
    min_coverage_shaped = 0.35  # share of the outline seen as a clean edge
    min_band_shaped = 0.06  # rim evidence along each long side, at least
    max_cross_shaped = 0.3  # rim evidence through the middle, at most
    min_ends_shaped = 0.3  # rim evidence on the two ends together, at least
    # ... unless (_shape_fit_ok) this much of the outline is seen, each long side shows
    # this much rim and nothing this much lies through the middle
    min_coverage_clean, min_band_clean, max_cross_clean = 0.55, 0.25, 0.05
    # A kept fit with this much rim through its middle, a quarter turn across a fit
    # refused only for its ends seen at least this share as well: that fit (_across_two)
    across_two_cross, across_two_score = 0.1, 0.9
    across_two_inside = 0.75  # ... and whose inside is this much not the table (_holds_figures)
    across_two_overlap = 0.2  # ... overlapping no clean kept fit by this share of its area
    # An oval with one long side hidden is a base with this much of its outline seen
    # and this much rim evidence on each end.
    min_coverage_oval_side_hidden, min_ends_oval_side_hidden = 0.5, 0.4
    # A fit seeing this much of its outline, and this much rim on each long side, is a
    # base whatever lies through its middle.
    min_coverage_seen_all_round, min_band_seen_all_round = 0.65, 0.45
    # A fit with less of its outline seen is a base if it has rim evidence all round.
    min_coverage_all_round, min_band_all_round, max_cross_all_round = 0.22, 0.3, 0.35
    # ... or more through its middle, up to its weakest side's rim less this much (a red
    # miniature on a red-rimmed stand, seen at 4K; None: never more).
    cross_below_rim: float | None = 0.15
    # Oval and rectangular bases under ``pursue_max_depth_px`` deep in the view (an
    # Epic stand below 4K: a rim a pixel or two wide, which fitted 5-90 % of them on
    # tuning tables) are also found as foreground of their outline (_pursued_stands):
    # placements responding at least ``pursue_threshold``, whose outline's rim
    # evidence names one side, ``pursue_side_ratio`` times any other's and at least
    # ``pursue_side_min`` (or, on an Epic table, whose unit names it:
    # _sided_by_unit). (Larger ones gained little on the tuning tables' ovals and
    # lost sides: a round base under a large miniature reads as an oval.) (0.5 found
    # more on 16 Epic tuning tables, recall 88.7 -> 91.5 %, precision 97.5 -> 97.0 %,
    # but swapped two stands' ids in the bundled clip's fast slide.)
    # Round bases beyond a side's roster inside an oval or rectangle it lacks, fitted
    # there but refused: that outline instead (_rounds_as_outline); also round bases
    # the roster has room for, where the outline's rim is seen this many times better.
    rounds_as_outlines = True
    outline_over_round = 1.5
    # ... and only where this share of its outline lies on what is not the table
    # (foreground less shadows, _filled): a base under its miniature does, an oval
    # borrowing a round base's rim runs over bare table (a 720p tuning frame's: 0.8 and
    # 1.0 against 0.33-0.63).
    outline_filled = 0.75
    outline_read_filled = 0.5  # the same where the refiner read a base inside (_outline_read_as_round)
    suspect_round_coverage = 0.5  # (_suspect_rounds)
    pursue_max_depth_px = 20.0
    pursue_threshold = 0.55
    # A patch the pursuit places under ``pursue_threshold`` but at least this, of an
    # outline some side is short of, is no base but a doubt (world.Doubt) for those
    # sides: where the roster says a fighter is missing, a ruling it could change says
    # so. (A green rim under a yellow-green miniature on a green mat showed as a patch
    # responding 0.36.) Looked for once the bases are placed, so that no faint patch
    # takes a base's pixels. (99 Warcry tuning tables: wrong control calls 29 -> 17,
    # right calls flagged 240 -> 249, no fighter changed; at 0.25 no fewer wrong,
    # 252 flagged; 50 mixed ones: wrong 9 -> 8, flagged 132 -> 135.)
    doubt_threshold = 0.35
    # A round doubt the learned refiner reads as a base of one side alone (at least
    # ``doubt_base_p`` for it, under ``doubt_rival_p`` for each other) is that base
    # (_doubts_read). (53 tuning tables it never saw: recall 95.3 -> 96.6 %, precision
    # 98.6 -> 98.5 %; at 0.95 the same.)
    doubt_base_p, doubt_rival_p = 0.9, 0.3
    # ... and of the sides it reads alike (a blue rim and a purple one under a miniature),
    # the one alone whose roster lists the size it reads there (_doubts_read).
    doubt_side_by_size = True
    # ... and a weak round base it reads under ``side_own_p`` for its side, and so for
    # one other, is that other's (_sides_read). (There: sides right 97.2 -> 98.4 %,
    # control calls agreeing 1,100 -> 1,105 of 1,192, wrong 18 -> 17.)
    read_sides, side_own_p = True, 0.1
    # ... and not only weak ones: every round base (False: those under refine_below).
    # (23 Warcry tuning tables the refiner never saw: sides right 2,547 -> 2,554 of 2,579,
    # 8 made right, 1 wrong; 16 mixed ones: one more right; nothing else changed.)
    read_sides_all = True
    # ... and a round base placed from little rim (as ``_refined`` picks them) that it
    # reads under ``side_own_p`` for its own side and names no other's: its side unsure,
    # every other side a rival (the rules then count it surely for none).
    absent_side_unsure = True
    # A plain token on a base it names is that base's miniature (_on_named_bases).
    tokens_off_named = True
    # ... and so is every patch of a round size the bases found leave unexplained,
    # whatever the rosters lack (_proposed_rounds). (53 tuning tables it never saw:
    # recall 96.6 -> 97.7 %, precision 98.5 -> 98.3 %, control calls agreeing 1,105 ->
    # 1,112, wrong 17 -> 15; a base it names held to its doubt's sides 97.6 %; named
    # only at 0.97 or 0.99 the same; also on platforms' tops, recall 97.63 -> 97.76 %.)
    propose_rounds = True
    # ... the stands' own pursuit also reads their rims (vision.stands.pursue's
    # ``rims``: a block of stands in contact is one patch of foreground, which its rims
    # tile one way): a placement's response adds ``pursue_rim_weight`` times its rim
    # band's evidence less its core's, on the map of the side that shows it best, and
    # it must reach ``pursue_stand_threshold``. (50 Epic tuning tables: recall 92.3 ->
    # 96.9 %, at 720p 84.3 -> 94.8 %, precision 99.3 -> 99.4 %, sides 99.3 -> 99.6 %;
    # on one map of every side's evidence: 96.7 %, a unit of white rims round green
    # miniatures lost whole. On that one map, weight 1 / 2 / 4: recall 95.3 /
    # 96.0 / 95.9 %, precision 99.4 / 99.4 / 99.0 % at threshold 0.55; threshold
    # 0.65 / 0.5 / 0.45 at weight 2: 93.3 / 96.7 / 96.9 %, precision 99.4 / 99.4 / 99.3 %.)
    pursue_rim_weight, pursue_stand_threshold = 2.0, 0.5
    pursue_side_min, pursue_side_ratio = 0.003, 2.0
    # ... at least ``pursue_side_min_warned`` where a rival side's rims are warned near
    # the mat's colour (a white side on a pale mat: its stands read 0-0.08 of red, red
    # ones 0.13-0.45, on a tuning table).
    pursue_side_min_warned = 0.1
    # An Epic stand whose rims name no side takes the side of the nearest stand whose
    # side is known within ``unit_reach_in`` (a unit's stands keep within 5 cm, 2 in),
    # unless its own evidence for that side is under ``unit_side_share`` of the best.
    unit_reach_in, unit_side_share = 2.0, 0.5
    # A base whose side only the roster gave (the one side short of its size, every other
    # its rival) is a doubt where more such patches than the side lacks were found, and
    # is not given back by a token disc capped away (_unsure_within_short, _settle_discs;
    # False: off). (Our renderer's state-token table, seed 21, 10 s at 15 fps: dice and
    # damage counters as the blue side's fighters 477 -> 296 fighter-frames, tokens
    # attached to the wrong fighter 48 -> 0; 16 Warcry tuning tables: precision 99.48 ->
    # 99.74 %, recall unchanged; 12 mixed: precision 99.30 -> 99.60 %, recall 99.49 ->
    # 99.39 %.)
    roster_side_guard = True
    file_ratio, file_least = 2.5, 0.2  # a file's ends' rim evidence moved to against where fitted, and at least (_files_aligned; ratio 0: off)
    # ... or, where the rims gain less (or for a lone stand), where its stands' insides
    # then hold ``file_fill_gain`` more figures (_file_fill; 0: off). (24 Epic tuning
    # tables: floor RMS 0.0516 -> 0.0498 in, recall and precision unchanged; a lone
    # stand moved on its rims alone too: 0.0474 in, but a right one moved off its
    # figures onto a neighbour's rim on another tuning table.)
    file_fill_gain = 0.1
    unit_relax_score = 0.15  # a refused stand fit's least score where its side's units lack stands (_stands_units_lack)
    # The most stands a gap in a file or a rank may hold (_stands_in_gaps; 0: off), and how
    # much of a gap's stand may lie over what was found (its neighbours' fits are faint).
    gap_stands_most, gap_overlap = 2, 0.2
    lone_stands_unsure = True  # a stand alone of its side beside another side's: that side a rival (_lone_stand_rivals)
    # A stand neither its rims nor a unit sides is kept, its side unsure, only where at
    # least this share of its patch's foreground is not the table in shadow.
    unsure_stand_lit = 0.5
    # Any base is also found as foreground of its outline while a side's roster
    # lists more of that outline than were found (_pursued_outline), in a whole look,
    # on the floor and (``pursue_platforms``) on platforms' tops.
    pursue_rounds = True
    pursue_platforms = True
    # ... whose outline may run along the patch only on its half facing the camera
    # (a miniature and the base's wall lean away from it: outline_on_boundary).
    pursue_facing = True
    # Round bases placed from little rim (under ``refine_below`` of it fitted, or found
    # as a patch of foreground) are placed again by the learned refiner
    # (vision.refiner), where it moves them between ``refine_min_in`` and
    # ``refine_reach_in`` (it reads a crop at 20 px/in: where it agrees with a rim fit
    # to within its own noise, the fit, made at the view's own scale, stays; on
    # 53 tuning tables it was not trained on, 1080p weak fits' median error 0.018 ->
    # 0.031 in moving all, 0.021 so); their size too where it is sure of one
    # (``refine_size_p``) of its side's (patches' sizes wrong 29 -> 20 % at 720p).
    # Read twice (``refine_reads``: the second read centred where the first put the
    # base), within 0.75 in of the first read (it was taught steps of up to half an inch:
    # a patch's miniature pulls it further), and weighed against the fit whose sigma
    # counts its size's doubt (``refine_weighed``). On the 20 Warcry 720p tuning tables it
    # was never taught on, floor RMS 0.089 -> 0.071 in (read once, within 0.5 in), p95
    # 0.099 -> 0.091 in (taken outright: 0.070 and 0.089 in, but the bundled clip's red
    # base by a terrain piece, which it reads 0.12 in off, 0.0172 -> 0.0178 in RMS; weighed
    # by the fit's sigma alone: 0.073 in).
    # Tried and left out: read so from under half their rim seen (not 0.35): Warcry 720p
    # tuning floor RMS 0.058 -> 0.056 in, mixed 0.057 -> 0.055; but a regional look (which
    # no refiner reads) then places some bases 0.05 in from where the whole look does, and
    # one moved 0.10 in under light dimmed after set-up (tests/test_detection_eval.py).
    refine_below, refine_reach_in, refine_min_in = 0.35, 0.75, 0.06
    refine_reads, refine_weighed = 2, True
    # Round bases fitted on under this share of their rim: their sigma counts the doubt of
    # their size as the refiner reads it (learned._size_doubted; 0: not).
    size_doubt_below = 0.6
    # Epic stands placed again where the learned stand refiner reads them, within this
    # reach and turn (learned_stands._stands_refined), weighed against their fit (or taken).
    stand_reach_in, stand_turn_reach_deg, stand_weighed = 0.5, 20.0, True
    # A stand the learned quarter-turn reader reads as lying across two side by side, this
    # sure, is those two (learned_stands._quarters_read).
    read_quarters, quarter_p = True, 0.9
    refine_size_p = 0.9
    # Two round bases at one height that the refiner left overlapping (their centres under
    # learned.BASES_APART of their radii's sum apart) are one base seen twice: the smaller
    # goes (learned._overlaps_parted). On 32 Warcry tuning tables, 12 such pairs, in each
    # the smaller the phantom, the larger the true base.
    part_overlaps = True
    # A base the learned shape reader reads as another shape of its side's roster, this
    # sure and its long size this near the roster's, is that base (learned_shapes._shapes_read).
    read_shapes, shape_read_p, shape_read_size_mm = True, 0.9, 12.0
    # ... each read so where a second read, centred where the first reading this sure of a
    # shape other than the base's puts it, says so (False: where the first read says so).
    # 50 mixed tuning tables: floor RMS 0.062 -> 0.059 in, recall 98.87 -> 98.91 %,
    # precision 99.09 -> 99.11 %, sides 98.86 -> 98.88 %.
    shape_read_centred, shape_recentre_p = True, 0.5
    # ... and two touching round bases read between them as one such outline of a side
    # that lacks it (learned_shapes._ends_read_as_outline): an oval's two ends.
    read_ends, ends_gap_in = True, 0.3
    # ... and the round bases read from patches the rules could not name (_doubts_read) read
    # so too (a patch of an oval whose miniature hides most of its rim reads as a round). 50
    # mixed tuning tables: floor RMS 0.066 -> 0.062 in, platforms 0.059 -> 0.043; ovals read
    # as rounds of a side short of ovals 24 -> 6 fighter-frames; recall, precision alike.
    read_made_shapes = True
    # ... and every other base of such a table placed (and turned) between its fit and
    # where the reader puts it within this reach, each weighed by its error (_shapes_weighed).
    # ... read a second time centred where the first read put it (shape_reads).
    shape_weighed, shape_reach_in, shape_reads = True, 0.75, 2
    # Tokens looked for on the floor where a base found on a platform shows
    # (its top's picture met with the floor's plane): False, they are not (_not_token_places).
    tokens_under_lifted_bases = False
    # A plain token's edge is told from a side's rim of its colour only if that side has a
    # round base within this many mm of the token's size (its roster): a 1 in red disc is no
    # red side's 32 mm base. None: every side's rim, whatever its bases.
    token_rim_size_mm: float | None = 4.0
    # Plain tokens of a configured colour looked for beside terrain that hides part of
    # them, while the game has more than were found (_tokens_by_terrain).
    tokens_by_terrain = True
    # A plain token's disc whose middle is this share or more the empty table in shadow
    # (its print's pattern kept) is a shadow, whatever its colour (_in_shadow; above 1:
    # never). (A miniature's shadow read as a black token: 0.73; black, white tokens on
    # dark green and pale grey mats: 0.01, 0.38.)
    styled_shadow_share = 0.6
    # ... sized and centred by the circle running along the patch's boundary within
    # ``pursue_round_reach_in`` of the patch's placement, on ``pursue_round_share`` of
    # its length at least.
    pursue_round_reach_in, pursue_round_share = 0.25, 0.55
    # ... or on ``pursue_round_share_named`` where its rim names its side: at 720p a
    # base's blurred edge and its shadow's leave half the outline's boundary unseen.
    pursue_round_share_named = 0.45
    # A fit's side is the colour its rim wins (_sides_by_colour): ``side_colour_share``
    # of it at least, ``side_colour_ratio`` times the fitted side's share.
    sides_by_colour, side_colour_share, side_colour_ratio = True, 0.1, 2.0
    side_colour_inner_in = 0.2  # (past a rim's 2-3.5 mm: paint that goes on inward is no rim)
    # A base's patch holding a rim fit of its outline refused for how little rim it saw,
    # the fit's inside at least ``outline_filled`` not the table: the fit places it (a
    # miniature overhanging its oval hides most of the rim and makes the patch's boundary
    # its own).
    pursue_rim_anchor = True
    pursue_round_offset_px = 1.5  # (the boundary's offset, where no base shows it)
    # A stand placed by its outline along its patch's edge where a disc explains the
    # patch better than the pursuit's placement, on this share of its outline at least
    # (48 Epic tuning tables: the stands so found ran along 0.66-0.85 of theirs, a
    # tagged objective's disc along 0.55: _stand_by_its_boundary).
    stand_boundary_share = 0.6
    # ... or where both its ends (its inside beyond every disc's radius) are at least
    # this much foreground: a patch longer than a disc (_pursued_stands; 2: off). (40
    # Epic tuning tables, placements a disc explained better, rim and boundary no help:
    # 697 on tokens filled 0.00-0.59, 22 on stands 0.41-0.58 (7) or 0.98-1.00 (15).)
    stand_ends_filled = 0.8
    # ... or where another stand placed lies end to end with it, within this (in; 0: off).
    stand_file_tol_in = 0.15
    pursue_round_size_step_mm = 10.0  # (sizes a patch may be taken for: 25/32/40/50/60 mm)
