package im.bench;

import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import javax.imageio.ImageIO;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The PNG charts (XChart) that the benches' {@code --chart} writes of how their figures grow with the size of the
 * input: one look (white, legend below) and one writer that puts several charts side by side
 * under a common title, for figures whose units differ too much to share an axis.
 */
final class Charts {
    private static final int TITLE_HEIGHT = 40;

    static {
        System.setProperty("java.awt.headless", "true");   // bench machines have no display; must precede AWT's first use
    }

    private Charts() {}

    /** An empty chart of figures against the size; linear axes (a logarithmic one labels only powers of ten). */
    static XYChart against(String title, String xTitle, String yTitle, int width, int height) {
        XYChart c = new XYChartBuilder().width(width).height(height).title(title).xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
        c.getStyler().setChartBackgroundColor(Color.WHITE);
        return c;
    }

    /** Adds a series of the finite points only: a size that failed, or a figure it could not measure, is NaN. */
    static void addSeries(XYChart c, String name, double[] x, double[] y) {
        int[] ok = IntStream.range(0, x.length).filter(i -> Double.isFinite(x[i]) && Double.isFinite(y[i])).toArray();
        if (ok.length == 0) return;
        c.addSeries(name, Arrays.stream(ok).mapToDouble(i -> x[i]).toArray(), Arrays.stream(ok).mapToDouble(i -> y[i]).toArray());
    }

    /** Writes the charts side by side as one PNG, {@code title} above them (null: none); creates the parent directory. */
    static void write(Path path, String title, XYChart... charts) throws IOException {
        List<BufferedImage> images = Arrays.stream(charts).map(BitmapEncoder::getBufferedImage).toList();
        int top = title == null ? 0 : TITLE_HEIGHT;
        int width = images.stream().mapToInt(BufferedImage::getWidth).sum();
        int height = top + images.stream().mapToInt(BufferedImage::getHeight).max().orElse(0);
        BufferedImage out = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = out.createGraphics();
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, width, height);
        if (title != null) {
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
            g.drawString(title, (width - g.getFontMetrics().stringWidth(title)) / 2, TITLE_HEIGHT - 12);
        }
        int x = 0;
        for (BufferedImage image : images) {
            g.drawImage(image, x, top, null);
            x += image.getWidth();
        }
        g.dispose();
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) Files.createDirectories(parent);
        if (!ImageIO.write(out, "png", path.toFile())) throw new IOException("no PNG writer for " + path);
        System.out.println("# chart written to " + path);
    }
}
