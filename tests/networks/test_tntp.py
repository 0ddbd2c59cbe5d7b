"""TNTP and arc-table readers: the real networks, and each malformed input named by file and line/row."""

from __future__ import annotations

import pandas as pd
import pytest

from mom_pipeline.networks import NetworkInputError, read_arc_table, read_tntp_network, read_tntp_trips

from network_files import network_file, network_files

HEADER = """<NUMBER OF ZONES> 2
<NUMBER OF NODES> 4
<FIRST THRU NODE> 3
<NUMBER OF LINKS> {links}
<END OF METADATA>

~\tinit_node\tterm_node\tcapacity\tlength\tfree_flow_time\tb\tpower\tspeed\ttoll\tlink_type\t;
"""
LINKS = ["\t1\t3\t100\t1\t1\t0.15\t4\t0\t0\t1\t;", "\t3\t4\t100\t1\t2\t0.15\t4\t0\t0\t1\t;",
         "\t4\t2\t100\t1\t1\t0.15\t4\t0\t0\t1\t;"]


def write_net(tmp_path, links=LINKS, count=None, header=HEADER):
    path = tmp_path / "tiny_net.tntp"
    path.write_text(header.format(links=len(links) if count is None else count) + "\n".join(links) + "\n")
    return path


@pytest.mark.parametrize("name, nodes, links, first_thru", [("SiouxFalls", 24, 76, 0), ("Anaheim", 416, 914, 38),
                                                             ("Berlin-Friedrichshain", 224, 523, 23)])
def test_real_networks(name, nodes, links, first_thru):
    network = read_tntp_network(network_file(name))
    assert (network.n_nodes, network.n_arcs, network.first_thru_node) == (nodes, links, first_thru)
    assert list(network.attributes.columns) == ["capacity", "length", "free_flow_time", "b", "power", "speed", "toll",
                                                "link_type"]
    assert network.tails.min() >= 0 and network.heads.max() < nodes


def test_trips_of_the_real_networks():
    path = network_files("SiouxFalls")[1]
    trips = read_tntp_trips(path, n_zones=24)
    assert trips.shape == (24, 24) and trips.sum() == pytest.approx(360600.0)
    assert trips[0, 1] == 100.0 and trips[0, 3] == 500.0


def test_small_file_reads(tmp_path):
    network = read_tntp_network(write_net(tmp_path))
    assert network.first_thru_node == 2 and list(network.arc_labels) == ["1-3", "3-4", "4-2"]
    assert network.attributes["free_flow_time"].tolist() == [1.0, 2.0, 1.0]


@pytest.mark.parametrize("change, line, words", [
    (lambda links: links, None, "NUMBER OF LINKS"),  # count below
    (lambda links: links[:1] + ["\t3\t4\t100\t1\t2\t0.15\t4\t0\t0\t;"] + links[2:], 9, "9 values but 10 columns"),
    (lambda links: links[:1] + ["\t3\t4\tlots\t1\t2\t0.15\t4\t0\t0\t1\t;"] + links[2:], 9, "'lots'"),
    (lambda links: links[:1] + ["\t3\t7\t100\t1\t2\t0.15\t4\t0\t0\t1\t;"] + links[2:], 9, "node 7"),
    (lambda links: links + [links[1]], 11, "3-4 is given twice (lines 9 and 11)"),
    (lambda links: links[:1] + ["\t3\t4\t100\t1\t2\t0.15\t4\t0\t0\t1"] + links[2:], 9, "end in ';'"),
])
def test_malformed_links_name_the_file_and_line(tmp_path, change, line, words):
    links = change(list(LINKS))
    count = 5 if words == "NUMBER OF LINKS" else None
    with pytest.raises(NetworkInputError) as error:
        read_tntp_network(write_net(tmp_path, links, count))
    assert "tiny_net.tntp" in str(error.value) and words in str(error.value)
    if line is not None:
        assert error.value.line == line and f"line {line}" in str(error.value)


@pytest.mark.parametrize("drop, words", [("<FIRST THRU NODE> 3\n", "<FIRST THRU NODE> is missing"),
                                         ("<END OF METADATA>\n", "END OF METADATA"),
                                         ("<NUMBER OF NODES> 4\n", "<NUMBER OF NODES> is missing")])
def test_missing_metadata(tmp_path, drop, words):
    with pytest.raises(NetworkInputError, match=words):
        read_tntp_network(write_net(tmp_path, header=HEADER.replace(drop, "")))


def test_trips_errors_name_the_line(tmp_path):
    path = tmp_path / "t_trips.tntp"
    path.write_text("<NUMBER OF ZONES> 2\n<END OF METADATA>\n\nOrigin 1\n  1 : 0.0;  2 : 5.0;\nOrigin 2\n  3 : 1.0;\n")
    with pytest.raises(NetworkInputError, match=r"t_trips.tntp', line 7: destination 3"):
        read_tntp_trips(path)
    path.write_text("<NUMBER OF ZONES> 2\n<END OF METADATA>\nOrigin 1\n  2 : x;\n")
    with pytest.raises(NetworkInputError, match="line 4: value 'x'"):
        read_tntp_trips(path)
    path.write_text("<NUMBER OF ZONES> 2\n<END OF METADATA>\nOrigin 1\n  2 : 4.5;\nOrigin 2\n 1 : 1;\n")
    assert read_tntp_trips(path).tolist() == [[0.0, 4.5], [1.0, 0.0]]


def test_arc_table_parallel_arcs_need_ids(tmp_path):
    table = pd.DataFrame({"tail": [10, 10, 20], "head": [20, 20, 30], "free_flow_time": [1.0, 2.0, 1.0]})
    with pytest.raises(NetworkInputError, match=r"row 1: arc 10-20 is given twice"):
        read_arc_table(table)
    network = read_arc_table(table.assign(arc=["a", "b", "c"]))
    assert list(network.arc_labels) == ["a", "b", "c"] and network.n_nodes == 3
    assert list(network.node_labels) == [10, 20, 30] and network.arcs_between(0, 1) == [0, 1]
    path = tmp_path / "arcs.csv"
    table.assign(arc=["a", "b", "c"], free_flow_time=["1", "2", "slow"]).to_csv(path, index=False)
    with pytest.raises(NetworkInputError, match=r"arcs.csv', row 2: value 'slow'"):
        read_arc_table(path)


def test_arc_table_zones_follow_labels():
    table = pd.DataFrame({"tail": [1, 3, 4], "head": [3, 4, 2], "free_flow_time": [1.0, 2.0, 1.0]})
    assert read_arc_table(table, first_thru_node=3).first_thru_node == 2
    assert read_arc_table(table).first_thru_node == 0
